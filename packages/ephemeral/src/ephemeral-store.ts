/**
 * The ephemeral keys port: short-lived string values with TTLs, shared by every replica.
 * Used for leases and locks (session runs, sandboxes, token refresh), pending approvals,
 * workflow records and short caches (web search).
 *
 * In the contract: every operation is atomic across replicas; a key past its TTL is gone for
 * every reader; values are strings (callers encode JSON themselves); keys are namespaced by the
 * adapter's prefix. TTLs are positive milliseconds, rounded up to whole ms (anything else
 * rejects with a `RangeError`). After `close()` every method rejects with
 * `EphemeralClosedError`; `close()` is idempotent.
 * Not in the contract: durability. A Redis restart may lose keys; anything that must survive
 * belongs in the durable store.
 */
export interface EphemeralStore {
  /**
   * Sets `key`. With `ifAbsent`, only when the key does not exist (the dedup primitive).
   * @returns whether the value was written.
   */
  set(key: string, value: string, options?: SetOptions): Promise<boolean>;
  get(key: string): Promise<string | null>;
  /** @returns whether the key existed. */
  delete(key: string): Promise<boolean>;
  /** Reads and deletes in one step, so exactly one of several concurrent callers gets the value. */
  take(key: string): Promise<string | null>;
  /**
   * Adds `by` (default 1, an integer) and returns the new value; the TTL is set when the key is
   * created and not extended by later increments (a fixed window). The value reads back as a
   * decimal string. Rejects with `EphemeralNotIntegerError` when the key holds something else.
   */
  increment(key: string, options: { ttlMs: number; by?: number }): Promise<number>;
  /** Remaining time to live in ms; null when the key does not exist or has no TTL. */
  ttl(key: string): Promise<number | null>;
  /**
   * The live keys that start with `prefix` (taken literally), in no particular order. A scan of
   * the whole store on Redis: for rare operations (erasing a user), never on a request's path.
   */
  keysWithPrefix(prefix: string): Promise<string[]>;
  close(): Promise<void>;
}

export interface SetOptions {
  /** Time to live in milliseconds; omitted means no expiry. */
  ttlMs?: number;
  /** Write only when the key does not exist. */
  ifAbsent?: boolean;
}
