import { createHash, randomBytes } from 'node:crypto';
import { RefreshTokenRepository, type Queryable } from '@agent-backend/store';
import { signAccessToken, type ACCESS_TOKEN_TTL_SECONDS } from './access-tokens.js';
import type { KeyPair } from './keys.js';
import { assertUserIdAllowed } from './reserved-user-ids.js';

/** Refresh-token lifetime (spec 5 rule 2): 30 days. */
export const REFRESH_TOKEN_TTL_MS = 30 * 24 * 60 * 60 * 1000;

/** The refresh token is unknown, expired or revoked. One error for all three: no oracle. */
export class InvalidRefreshTokenError extends Error {
  constructor() {
    super('refresh token is invalid or expired');
    this.name = 'InvalidRefreshTokenError';
  }
}

/** Names a client by its address and user agent, without storing either. */
export function clientDigest(address: string | undefined, userAgent: string | undefined): string {
  return createHash('sha256')
    .update(`${address ?? ''}\u0000${userAgent ?? ''}`, 'utf8')
    .digest('hex');
}

/** Tokens are stored only as this hash; a leaked table does not leak usable tokens. */
export function hashRefreshToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/**
 * Issues refresh tokens (256 random bits, `rt_` + base64url) and exchanges them for access
 * tokens. Refresh tokens are not rotated on use: spec 4.1 returns no new refresh token.
 */
export class RefreshTokenService {
  private readonly repo: RefreshTokenRepository;

  constructor(
    db: Queryable,
    private readonly keys: KeyPair,
    private readonly clock: () => number = Date.now,
  ) {
    this.repo = new RefreshTokenRepository(db);
  }

  /** Mints a refresh token for `userId`; the caller hands it to the user once. */
  async issue(userId: string): Promise<{ refreshToken: string; expiresAt: Date }> {
    if (!userId) throw new Error('user id is required');
    assertUserIdAllowed(userId);
    const refreshToken = `rt_${randomBytes(32).toString('base64url')}`;
    const expiresAt = new Date(this.clock() + REFRESH_TOKEN_TTL_MS);
    await this.repo.insert({ tokenHash: hashRefreshToken(refreshToken), userId, expiresAt });
    return { refreshToken, expiresAt };
  }

  /** A new refresh token and an access token for `userId` (what `pnpm token:issue` prints). */
  async issuePair(userId: string): Promise<{ refreshToken: string; accessToken: string }> {
    const { refreshToken } = await this.issue(userId);
    const { accessToken } = await signAccessToken(this.keys, userId, this.clock());
    return { refreshToken, accessToken };
  }

  /**
   * Spec 4.1: a valid refresh token yields a new one-hour access token for its user. `client`
   * names where the exchange comes from (a digest, see {@link clientDigest}); `newClient` says
   * whether the token was last used from elsewhere (or never).
   */
  async exchange(
    refreshToken: string,
    client?: string,
  ): Promise<{
    accessToken: string;
    expiresIn: typeof ACCESS_TOKEN_TTL_SECONDS;
    userId: string;
    newClient: boolean;
  }> {
    const record = await this.repo.use(
      hashRefreshToken(refreshToken),
      new Date(this.clock()),
      client,
    );
    if (!record) throw new InvalidRefreshTokenError();
    const signed = await signAccessToken(this.keys, record.userId, this.clock());
    return { ...signed, userId: record.userId, newClient: record.newClient };
  }

  /** @returns the token's user when a live token was revoked now, else null. */
  revoke(refreshToken: string): Promise<string | null> {
    return this.repo.revoke(hashRefreshToken(refreshToken), new Date(this.clock()));
  }

  /** Revokes every live refresh token of `userId`. @returns how many were live. */
  revokeAllForUser(userId: string): Promise<number> {
    return this.repo.revokeAllForUser(userId, new Date(this.clock()));
  }
}
