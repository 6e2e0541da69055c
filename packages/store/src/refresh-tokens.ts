import type { Queryable } from './database.js';

export interface RefreshTokenRecord {
  tokenHash: string;
  userId: string;
  createdAt: Date;
  expiresAt: Date;
  revokedAt: Date | null;
}

interface RefreshTokenRow extends Record<string, unknown> {
  token_hash: string;
  user_id: string;
  created_at: Date;
  expires_at: Date;
  revoked_at: Date | null;
}

const toRecord = (row: RefreshTokenRow): RefreshTokenRecord => ({
  tokenHash: row.token_hash,
  userId: row.user_id,
  createdAt: new Date(row.created_at),
  expiresAt: new Date(row.expires_at),
  revokedAt: row.revoked_at ? new Date(row.revoked_at) : null,
});

/** Refresh tokens, by the SHA-256 hash of the token (the token itself is never stored). */
export class RefreshTokenRepository {
  constructor(private readonly db: Queryable) {}

  async insert(record: { tokenHash: string; userId: string; expiresAt: Date }): Promise<void> {
    await this.db.query(
      'INSERT INTO refresh_tokens (token_hash, user_id, expires_at) VALUES ($1, $2, $3)',
      [record.tokenHash, record.userId, record.expiresAt],
    );
  }

  async find(tokenHash: string): Promise<RefreshTokenRecord | null> {
    const { rows } = await this.db.query<RefreshTokenRow>(
      'SELECT token_hash, user_id, created_at, expires_at, revoked_at FROM refresh_tokens WHERE token_hash = $1',
      [tokenHash],
    );
    return rows[0] ? toRecord(rows[0]) : null;
  }

  /**
   * Records a use of a token that is neither revoked nor expired at `now`, in one statement so a
   * concurrent revocation cannot slip between the check and the use. Returns the record, or null
   * when there is no usable token with that hash. With `client` (a digest naming the client),
   * `newClient` says whether the token's previous use was from another client (or there was
   * none); the row is locked for the statement, so of two uses from one new client on two
   * replicas exactly one sees it as new.
   */
  async use(
    tokenHash: string,
    now: Date,
    client?: string,
  ): Promise<(RefreshTokenRecord & { newClient: boolean }) | null> {
    const { rows } = await this.db.query<RefreshTokenRow & { new_client: boolean }>(
      `WITH previous AS (
         SELECT last_client FROM refresh_tokens WHERE token_hash = $1 FOR UPDATE
       )
       UPDATE refresh_tokens t SET last_used_at = $2, last_client = COALESCE($3, t.last_client)
         FROM previous
        WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND t.expires_at > $2
        RETURNING t.token_hash, t.user_id, t.created_at, t.expires_at, t.revoked_at,
          ($3::text IS NOT NULL AND previous.last_client IS DISTINCT FROM $3::text) AS new_client`,
      [tokenHash, now, client ?? null],
    );
    return rows[0] ? { ...toRecord(rows[0]), newClient: rows[0].new_client } : null;
  }

  /** @returns the user of a not-yet-revoked token that was revoked now, else null. */
  async revoke(tokenHash: string, now = new Date()): Promise<string | null> {
    const { rows } = await this.db.query<{ user_id: string }>(
      `UPDATE refresh_tokens SET revoked_at = $2 WHERE token_hash = $1 AND revoked_at IS NULL
       RETURNING user_id`,
      [tokenHash, now],
    );
    return rows[0]?.user_id ?? null;
  }

  /** Revokes every live token of `userId` ("sign out everywhere"). @returns how many. */
  async revokeAllForUser(userId: string, now = new Date()): Promise<number> {
    const { rowCount } = await this.db.query(
      'UPDATE refresh_tokens SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL',
      [userId, now],
    );
    return rowCount;
  }
}
