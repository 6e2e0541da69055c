import { TokenCutoffRepository, type Queryable } from '@agent-backend/store';
import {
  ACCESS_TOKEN_TTL_SECONDS,
  InvalidTokenError,
  type VerifiedToken,
} from './access-tokens.js';

export interface RevocationListOptions {
  /** How often the store is read for new cutoffs, in ms. @default 2000 */
  pollMs?: number;
  /** Told when a poll fails (the last known cutoffs stay in force). */
  onError?: (error: unknown) => void;
  /** The clock, in ms (tests). @default Date.now */
  now?: () => number;
}

/**
 * Rows recorded this long before the newest one seen are read again on the next poll: a
 * transaction that committed late with an earlier `recorded_at` is still picked up.
 */
const OVERLAP_MS = 30_000;

/**
 * Per-user cutoffs for the service's access tokens, kept in memory and refreshed from the store
 * (`token_cutoffs`) every `pollMs`, so a revocation made on any replica refuses that user's older
 * access tokens here within `pollMs` plus one query (the contract is 5 s). The store, not the
 * bus, carries them: a revocation must not be lost to a Redis reconnect. Checking a token is a
 * map lookup. Cutoffs older than the access-token lifetime are forgotten: every token they
 * concern has expired. A token is refused when it was issued in or before the second of the
 * cutoff (`iat` has one-second resolution), or carries no `iat` while its user has a cutoff.
 */
export class RevocationList {
  private readonly repo: TokenCutoffRepository;
  private readonly cutoffs = new Map<string, number>();
  private readonly listeners = new Set<(userId: string, notBefore: number) => void>();
  private readonly pollMs: number;
  private readonly now: () => number;
  private newest: Date | undefined;
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;

  constructor(
    db: Queryable,
    private readonly options: RevocationListOptions = {},
  ) {
    this.repo = new TokenCutoffRepository(db);
    this.pollMs = options.pollMs ?? 2000;
    this.now = options.now ?? Date.now;
  }

  /** Reads the current cutoffs (a failure is reported, not thrown), then polls until `close()`. */
  async start(): Promise<void> {
    await this.poll();
    this.timer = setInterval(() => void this.poll(), this.pollMs);
    this.timer.unref();
  }

  close(): void {
    clearInterval(this.timer);
    this.listeners.clear();
  }

  /** Calls `listener` when a user's cutoff moves forward (the gateway closes their sockets). */
  onRevoked(listener: (userId: string, notBefore: number) => void): void {
    this.listeners.add(listener);
  }

  /** Whether a token of `userId` issued at `iat` (epoch seconds) is revoked. */
  isRevoked(userId: string, iat: number | undefined): boolean {
    const notBefore = this.cutoffs.get(userId);
    if (notBefore === undefined) return false;
    return iat === undefined || iat * 1000 <= notBefore;
  }

  /** Throws {@link InvalidTokenError} `revoked` for a revoked token; returns it otherwise. */
  check(token: VerifiedToken): VerifiedToken {
    if (this.isRevoked(token.userId, token.iat))
      throw new InvalidTokenError('revoked', 'token has been revoked');
    return token;
  }

  /**
   * Refuses every access token of `userId` issued until now: stored for every replica, and in
   * force on this one at once.
   */
  async revokeUser(userId: string): Promise<void> {
    const notBefore = this.now();
    await this.repo.raise(userId, new Date(notBefore));
    this.apply(userId, notBefore);
  }

  private apply(userId: string, notBefore: number): void {
    const known = this.cutoffs.get(userId);
    if (known !== undefined && known >= notBefore) return;
    this.cutoffs.set(userId, notBefore);
    for (const listener of this.listeners) listener(userId, notBefore);
  }

  private poll(): Promise<void> {
    // One poll at a time: a slow store must not pile queries up.
    this.polling ??= this.read().finally(() => (this.polling = undefined));
    return this.polling;
  }

  private async read(): Promise<void> {
    const relevantAfter = this.now() - ACCESS_TOKEN_TTL_SECONDS * 1000 - 60_000;
    try {
      const since = this.newest && new Date(this.newest.getTime() - OVERLAP_MS);
      const rows = await this.repo.changedSince(since, new Date(relevantAfter));
      for (const row of rows) {
        this.apply(row.userId, row.notBefore.getTime());
        if (!this.newest || row.recordedAt > this.newest) this.newest = row.recordedAt;
      }
    } catch (error) {
      this.options.onError?.(error);
    }
    for (const [userId, notBefore] of this.cutoffs)
      if (notBefore < relevantAfter) this.cutoffs.delete(userId);
  }
}
