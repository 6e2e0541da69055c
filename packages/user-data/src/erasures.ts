import { randomUUID } from 'node:crypto';
import type { Database, Queryable } from '@agent-backend/store';

/** Counts of what an erasure removed, per kind of data (`messages`, `run_logs`, ...). */
export type RemovedCounts = Record<string, number>;

/** One erasure as the `erasures` table holds it. */
export interface ErasureRecord {
  readonly erasureId: string;
  readonly userId: string;
  readonly status: 'pending' | 'done';
  readonly removed: RemovedCounts;
  readonly requestedAt: Date;
  readonly finishedAt: Date | null;
}

type ErasureRow = {
  erasure_id: string;
  user_id: string;
  status: 'pending' | 'done';
  removed: RemovedCounts;
  requested_at: Date;
  finished_at: Date | null;
};

const COLUMNS = 'erasure_id, user_id, status, removed, requested_at, finished_at';

const toRecord = (row: ErasureRow): ErasureRecord => ({
  erasureId: row.erasure_id,
  userId: row.user_id,
  status: row.status,
  removed: row.removed,
  requestedAt: row.requested_at,
  finishedAt: row.finished_at,
});

/**
 * The `erasures` table (migration `0015_erasures`): one pending row per user being erased,
 * written before anything is removed. Whoever erases holds a lease on it, renewed with every
 * batch; a row whose lease ran out belongs to a process that died, and the next pass takes it
 * over. Two processes erasing one user at once are harmless: every step is a delete that counts
 * what it removed in the same transaction.
 */
export class ErasureRepository {
  constructor(
    private readonly db: Database,
    private readonly holder: string,
    private readonly leaseMs: number,
  ) {}

  /** The user's pending erasure, created if there is none, with this process's lease. */
  async begin(userId: string): Promise<ErasureRecord> {
    const created = await this.db.query<ErasureRow>(
      `INSERT INTO erasures (erasure_id, user_id, status, holder, lease_until)
       VALUES ($1, $2, 'pending', $3, now() + $4 * interval '1 millisecond')
       ON CONFLICT (user_id) WHERE status = 'pending' DO NOTHING
       RETURNING ${COLUMNS}`,
      [`era_${randomUUID()}`, userId, this.holder, this.leaseMs],
    );
    if (created.rows[0]) return toRecord(created.rows[0]);
    const { rows } = await this.db.query<ErasureRow>(
      `UPDATE erasures SET holder = $2, lease_until = now() + $3 * interval '1 millisecond'
       WHERE user_id = $1 AND status = 'pending' RETURNING ${COLUMNS}`,
      [userId, this.holder, this.leaseMs],
    );
    // Finished by another process between the insert and the update: start a new one.
    return rows[0] ? toRecord(rows[0]) : this.begin(userId);
  }

  /**
   * Adds `counts` to the erasure's and renews its lease, in the caller's transaction (the
   * deletions they count commit with them, so a crash never counts a row twice or loses one).
   */
  async count(tx: Queryable, erasureId: string, counts: RemovedCounts): Promise<void> {
    const entries = Object.entries(counts).filter(([, n]) => n > 0);
    let removed = `removed`;
    const params: unknown[] = [erasureId, this.holder, this.leaseMs];
    for (const [kind, n] of entries) {
      params.push(kind, n);
      const k = params.length - 1;
      removed = `jsonb_set(${removed}, ARRAY[$${k}::text],
        to_jsonb(COALESCE((removed ->> $${k}::text)::bigint, 0) + $${k + 1}::bigint))`;
    }
    await tx.query(
      `UPDATE erasures SET removed = ${removed}, holder = $2,
         lease_until = now() + $3 * interval '1 millisecond'
       WHERE erasure_id = $1`,
      params,
    );
  }

  /** Marks the erasure done; the user id stays until `forgetAfterMs` from now. */
  async finish(erasureId: string, forgetAfterMs: number): Promise<ErasureRecord> {
    const { rows } = await this.db.query<ErasureRow>(
      `UPDATE erasures SET status = 'done', finished_at = COALESCE(finished_at, now()),
         forget_after = COALESCE(forget_after, now() + $2 * interval '1 millisecond')
       WHERE erasure_id = $1 RETURNING ${COLUMNS}`,
      [erasureId, forgetAfterMs],
    );
    if (!rows[0]) throw new Error(`erasure ${erasureId} is gone`);
    return toRecord(rows[0]);
  }

  /**
   * Claims the pending erasures whose holder's lease ran out (its process died), oldest first:
   * each is this process's for a lease, so two workers sweeping at once do not both take one.
   */
  async claimAbandoned(limit = 100): Promise<Array<{ erasureId: string; userId: string }>> {
    const { rows } = await this.db.query<{ erasure_id: string; user_id: string }>(
      `UPDATE erasures SET holder = $2, lease_until = now() + $3 * interval '1 millisecond'
       WHERE erasure_id IN (
         SELECT erasure_id FROM erasures WHERE status = 'pending' AND lease_until < now()
         ORDER BY requested_at LIMIT $1 FOR UPDATE SKIP LOCKED)
       RETURNING erasure_id, user_id`,
      [limit, this.holder, this.leaseMs],
    );
    return rows.map((r) => ({ erasureId: r.erasure_id, userId: r.user_id }));
  }

  /**
   * Erasures done whose users' access tokens have all expired: their token cutoff is deleted
   * (unless a later revocation raised it past the erasure) and their user id cleared.
   * @returns how many were forgotten.
   */
  async forgetExpired(): Promise<number> {
    return this.db.transaction(async (tx) => {
      const { rows } = await tx.query<{ erasure_id: string; user_id: string; finished_at: Date }>(
        `SELECT erasure_id, user_id, finished_at FROM erasures
         WHERE user_id IS NOT NULL AND status = 'done' AND forget_after <= now()
         ORDER BY forget_after LIMIT 500 FOR UPDATE SKIP LOCKED`,
      );
      for (const row of rows) {
        await tx.query(`DELETE FROM token_cutoffs WHERE user_id = $1 AND not_before <= $2`, [
          row.user_id,
          row.finished_at,
        ]);
        await tx.query(`UPDATE erasures SET user_id = NULL WHERE erasure_id = $1`, [
          row.erasure_id,
        ]);
      }
      return rows.length;
    });
  }
}
