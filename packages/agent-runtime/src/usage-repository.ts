import type { UsageReport } from '@agent-backend/protocol';
import type { Database } from '@agent-backend/store';

/** A span of UTC days, both included, as `YYYY-MM-DD`. */
export interface DayRange {
  readonly from: string;
  readonly to: string;
}

/**
 * The token usage of a user's runs (`agent_runs.prompt_tokens`, `completion_tokens`, written
 * when a run ends), by the UTC day each run started. Runs of deleted sessions are deleted with
 * them, and so is their usage.
 */
export class UsageRepository {
  constructor(private readonly db: Database) {}

  async daily(userId: string, range: DayRange): Promise<UsageReport> {
    const { rows } = await this.db.query<{
      date: string;
      runs: number;
      prompt_tokens: string | number;
      completion_tokens: string | number;
    }>(
      `SELECT to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS date, count(*)::int AS runs,
         sum(prompt_tokens) AS prompt_tokens, sum(completion_tokens) AS completion_tokens
       FROM agent_runs
       WHERE user_id = $1
         AND started_at >= ($2::date)::timestamp AT TIME ZONE 'UTC'
         AND started_at < ($3::date + 1)::timestamp AT TIME ZONE 'UTC'
       GROUP BY 1 ORDER BY 1`,
      [userId, range.from, range.to],
    );
    const days = rows.map((row) => ({
      date: row.date,
      runs: row.runs,
      prompt_tokens: Number(row.prompt_tokens),
      completion_tokens: Number(row.completion_tokens),
    }));
    return {
      from: range.from,
      to: range.to,
      days,
      total: days.reduce(
        (sum, day) => ({
          runs: sum.runs + day.runs,
          prompt_tokens: sum.prompt_tokens + day.prompt_tokens,
          completion_tokens: sum.completion_tokens + day.completion_tokens,
        }),
        { runs: 0, prompt_tokens: 0, completion_tokens: 0 },
      ),
    };
  }
}
