import type { ConversationRepository, UsageRepository } from '@agent-backend/agent-runtime';
import { listNodeRecords } from '@agent-backend/node-rpc';
import type { AgentRun, NodeInfo, OperatorUser } from '@agent-backend/protocol';
import type { ServiceContext } from '@agent-backend/runtime';

/** Days of usage the lookup reports. */
const USAGE_DAYS = 30;
/** Most sessions and running runs the lookup lists. */
const MOST_LISTED = 20;
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/**
 * What the service holds of one user now, for `GET /api/operator/users/:user_id`: sessions,
 * runs, nodes in shared presence, usage, limits and tokens. Read from the store and presence,
 * so any API replica answers the same.
 */
export async function lookUpUser(
  { engines, config, limits }: ServiceContext,
  repos: { conversations: ConversationRepository; usage: UsageRepository },
  userId: string,
): Promise<OperatorUser> {
  const { db } = engines;
  const [counts, running, recent, nodes, usage, tokens] = await Promise.all([
    db.query<{ sessions: number; runs: number }>(
      `SELECT (SELECT count(*)::int FROM agent_sessions WHERE user_id = $1) AS sessions,
              (SELECT count(*)::int FROM agent_runs WHERE user_id = $1) AS runs`,
      [userId],
    ),
    db.query<{ run_id: string }>(
      `SELECT run_id FROM agent_runs WHERE user_id = $1 AND status = 'running'
        ORDER BY started_at DESC, run_id DESC LIMIT ${MOST_LISTED}`,
      [userId],
    ),
    repos.conversations.list(userId, { limit: MOST_LISTED }),
    listNodeRecords(engines.presence, userId),
    repos.usage.daily(userId, {
      from: day(Date.now() - (USAGE_DAYS - 1) * 86_400_000),
      to: day(Date.now()),
    }),
    db.query<{ live: number; revoked_before: string | null }>(
      `SELECT (SELECT count(*)::int FROM refresh_tokens
                WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > now()) AS live,
              (SELECT to_char(not_before AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
                 FROM token_cutoffs WHERE user_id = $1) AS revoked_before`,
      [userId],
    ),
  ]);
  const runs = await Promise.all(
    running.rows.map(({ run_id }) => repos.conversations.run(userId, run_id)),
  );
  const online: NodeInfo[] = nodes
    .filter(({ record }) => record.status !== 'offline')
    .map(({ record: { tools: _tools, ...node } }) => node);
  const ratePerMinute = Object.fromEntries(
    Object.entries(limits.rules).map(([name, rule]) => [
      name,
      Math.round((rule.points * 60_000) / rule.windowMs),
    ]),
  );
  return {
    user_id: userId,
    sessions: { count: counts.rows[0]?.sessions ?? 0, recent: recent.sessions },
    runs: {
      total: counts.rows[0]?.runs ?? 0,
      running: runs.filter((run): run is AgentRun => run !== null),
    },
    nodes_online: online,
    usage,
    limits: {
      max_concurrent_runs: config.MAX_CONCURRENT_RUNS_PER_USER,
      rate_per_minute: ratePerMinute,
    },
    tokens: {
      live_refresh_tokens: tokens.rows[0]?.live ?? 0,
      revoked_before: tokens.rows[0]?.revoked_before ?? null,
    },
  };
}
