import type { Queryable } from './database.js';

/** A user's cutoff: the service's access tokens issued at or before `notBefore` are refused. */
export interface TokenCutoff {
  userId: string;
  notBefore: Date;
  /** When the row last changed, by the database's clock (what pollers page by). */
  recordedAt: Date;
}

interface CutoffRow extends Record<string, unknown> {
  user_id: string;
  not_before: Date;
  recorded_at: Date;
}

const toCutoff = (row: CutoffRow): TokenCutoff => ({
  userId: row.user_id,
  notBefore: new Date(row.not_before),
  recordedAt: new Date(row.recorded_at),
});

/** Per-user access-token cutoffs (table `token_cutoffs`), written on revocation, polled by every replica. */
export class TokenCutoffRepository {
  constructor(private readonly db: Queryable) {}

  /** Moves the user's cutoff to `notBefore` (never back: a later revocation wins). */
  async raise(userId: string, notBefore: Date): Promise<void> {
    await this.db.query(
      `INSERT INTO token_cutoffs (user_id, not_before) VALUES ($1, $2)
       ON CONFLICT (user_id) DO UPDATE
         SET not_before = GREATEST(token_cutoffs.not_before, excluded.not_before),
             recorded_at = now()`,
      [userId, notBefore],
    );
  }

  /**
   * Cutoffs recorded after `since` (all when undefined) whose `notBefore` is after `relevantAfter`
   * (older ones concern only tokens that have expired anyway).
   */
  async changedSince(since: Date | undefined, relevantAfter: Date): Promise<TokenCutoff[]> {
    const { rows } = await this.db.query<CutoffRow>(
      `SELECT user_id, not_before, recorded_at FROM token_cutoffs
        WHERE ($1::timestamptz IS NULL OR recorded_at > $1) AND not_before > $2
        ORDER BY recorded_at`,
      [since ?? null, relevantAfter],
    );
    return rows.map(toCutoff);
  }
}
