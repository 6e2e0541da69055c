/**
 * The limits port: per-user request rates, slots (concurrent runs, open streams, connections)
 * and daily token counters, counted for the whole
 * deployment (every replica shares the counts when Redis is the engine; the embedded engine is one
 * process, so memory is the whole deployment there).
 *
 * In the contract: a rate limit is a fixed number of points per window for one key (a user, a
 * client address); {@link Limits.consume} takes one point atomically across replicas and says
 * whether it fitted. A run slot is held by one run until it is released or its lease runs out
 * (a crashed replica's slots come back within the lease). A store failure (Redis unreachable)
 * rejects: the caller decides whether that lets the request through or refuses it
 * (`LIMITS_ON_REDIS_ERROR`). After `close()` every method rejects with `LimitsClosedError`.
 * Not in the contract: exact fairness between keys, or counts surviving a Redis restart.
 */
export interface Limits {
  /** Takes one point of the rate limit `name` for `key`. Unknown names reject with a `RangeError`. */
  consume(name: string, key: string): Promise<RateDecision>;
  /**
   * Takes one of `max` slots of `pool` for `userId`, held by `holderId` (a run, a stream, a
   * connection; taking it again for the same holder is a no-op that says granted, and renews it
   * from then on). Granted: the slot is renewed while held, until `release()` or `leave()`.
   */
  acquireSlot(pool: SlotPool, userId: string, holderId: string, max: number): Promise<SlotDecision>;
  /**
   * Adds `amount` (>= 0; 0 only reads) to the counter `key`, which ends `ttlMs` after its last
   * addition, and returns its value afterwards (0 for a counter that does not exist).
   */
  addToCounter(key: string, amount: number, ttlMs: number): Promise<number>;
  /**
   * Forgets what is counted for `userId` (a user's data erased): their points in every rate
   * limit keyed by the user, and their run slots (a run still holding one releases nothing).
   * @returns how many counters and slot sets were stored.
   */
  forgetUser(userId: string): Promise<number>;
  close(): Promise<void>;
}

/**
 * What a slot limits, per user: agent runs going at once, open SSE streams, and gateway
 * connections of nodes (extension, desktop) and of web clients.
 */
export const SLOT_POOLS = ['runs', 'streams', 'node_connections', 'web_connections'] as const;
export type SlotPool = (typeof SLOT_POOLS)[number];

/** One rate limit: `points` requests per `windowMs`. `points` 0 turns the limit off. */
export interface RateRule {
  readonly points: number;
  readonly windowMs: number;
}

/** What {@link Limits.consume} decided, with what the `RateLimit` header fields carry. */
export interface RateDecision {
  readonly allowed: boolean;
  /** The rule's points per window. */
  readonly limit: number;
  /** Points left in the current window (0 when refused). */
  readonly remaining: number;
  /** Milliseconds until the window resets (and a refused request may be retried). */
  readonly resetMs: number;
}

export type SlotDecision =
  | {
      readonly granted: true;
      /**
       * Frees the slot, also after `leave()` (until its lease ran out). Each decision acts once,
       * and only while it is this process's latest for the holder: once the same holder id was
       * taken again here, the older decision's `release()` and `leave()` do nothing (the slot is
       * the new taker's, whatever order the two run in).
       */
      readonly release: () => Promise<void>;
      /**
       * Stops renewing the slot in this process without freeing it: it stays held until its
       * lease runs out, unless a process takes it again under the same holder id (which then
       * renews it). How a run hands its slot to the process that continues it.
       */
      readonly leave: () => void;
    }
  /** `held`: the slots the user holds now (all of them). */
  | { readonly granted: false; readonly held: number };

export class LimitsClosedError extends Error {
  constructor() {
    super('the limits store is closed');
    this.name = 'LimitsClosedError';
  }
}

/** The lease of a run slot and how often a holder renews it. */
export interface SlotLeaseOptions {
  /** A slot not renewed for this long is free again (a crashed replica's). @default 30_000 */
  leaseMs?: number;
  /** How often a held slot is renewed. @default a third of `leaseMs` (see {@link renewEvery}) */
  renewEveryMs?: number;
}

/** @see SlotLeaseOptions.leaseMs */
export const DEFAULT_SLOT_LEASE_MS = 30_000;

/** Renews a held slot every third of its lease, so one lost renewal does not free it. */
export function renewEvery(leaseMs: number): number {
  return Math.max(10, Math.floor(leaseMs / 3));
}
