/** How a client spaces its reconnection attempts. */
export interface ReconnectOptions {
  /** Set to `false` to stop at the first disconnection instead. @default true */
  enabled?: boolean;
  /** Upper bound of the first delay. @default 500 */
  initialDelayMs?: number;
  /** Upper bound of any delay. @default 30_000 */
  maxDelayMs?: number;
  /** Growth of the bound per failed attempt. @default 2 */
  factor?: number;
  /**
   * Share of the delay drawn at random, 0 to 1. `1` is "full jitter" (uniform between 0 and the
   * bound), which spreads the reconnections of many clients after a server restart instead of
   * having them all arrive in the same millisecond; `0` makes delays exact (tests).
   * @default 1
   */
  jitter?: number;
  /**
   * A connection that stays up this long counts as stable and resets the delay to its initial
   * bound. Not reset at once on open: a server that accepts and then drops the socket at once
   * would otherwise be hammered with immediate retries.
   * @default 10_000
   */
  stableAfterMs?: number;
}

export type ResolvedReconnectOptions = Required<ReconnectOptions>;

/** Fills in defaults and rejects options that would make delays negative or shrink. */
export function resolveReconnectOptions(options: ReconnectOptions = {}): ResolvedReconnectOptions {
  const resolved: ResolvedReconnectOptions = {
    enabled: options.enabled ?? true,
    initialDelayMs: options.initialDelayMs ?? 500,
    maxDelayMs: options.maxDelayMs ?? 30_000,
    factor: options.factor ?? 2,
    jitter: options.jitter ?? 1,
    stableAfterMs: options.stableAfterMs ?? 10_000,
  };
  const { initialDelayMs, maxDelayMs, factor, jitter, stableAfterMs } = resolved;
  if (!(initialDelayMs >= 0)) throw new RangeError('reconnect.initialDelayMs must be >= 0');
  if (!(maxDelayMs >= initialDelayMs))
    throw new RangeError('reconnect.maxDelayMs must be >= initialDelayMs');
  if (!(factor >= 1)) throw new RangeError('reconnect.factor must be >= 1');
  if (!(jitter >= 0 && jitter <= 1)) throw new RangeError('reconnect.jitter must be within 0..1');
  if (!(stableAfterMs >= 0)) throw new RangeError('reconnect.stableAfterMs must be >= 0');
  return resolved;
}

/**
 * Exponential backoff with jitter: the n-th delay (from 0) is drawn from
 * `[bound × (1 - jitter), bound]` with `bound = min(maxDelayMs, initialDelayMs × factor^n)`.
 */
export class Backoff {
  #attempt = 0;

  constructor(
    private readonly options: ResolvedReconnectOptions,
    /** Injected for tests; `Math.random` otherwise. */
    private readonly random: () => number = Math.random,
  ) {}

  /** Failed attempts since the last reset. */
  get attempt(): number {
    return this.#attempt;
  }

  /** The delay before the next attempt; counts one more attempt. */
  next(): number {
    const { initialDelayMs, maxDelayMs, factor, jitter } = this.options;
    const bound = Math.min(maxDelayMs, initialDelayMs * factor ** this.#attempt);
    this.#attempt++;
    return Math.round(bound * (1 - jitter * this.random()));
  }

  /** Back to the initial bound, after a stable connection. */
  reset(): void {
    this.#attempt = 0;
  }
}
