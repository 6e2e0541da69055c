/** The store was closed; every method rejects with this afterwards. */
export class EphemeralClosedError extends Error {
  readonly code = 'EPHEMERAL_CLOSED';
  constructor() {
    super('the ephemeral store is closed');
    this.name = 'EphemeralClosedError';
  }
}

/** `increment` on a key whose value is not an integer (e.g. one written by `set`). */
export class EphemeralNotIntegerError extends Error {
  readonly code = 'EPHEMERAL_NOT_INTEGER';
  constructor(readonly key: string) {
    super(`the value of "${key}" is not an integer`);
    this.name = 'EphemeralNotIntegerError';
  }
}

/**
 * Validates a TTL and rounds it up to whole milliseconds (Redis takes integers), so both adapters
 * accept and reject the same values.
 */
export function checkTtl(ttlMs: number): number {
  if (!Number.isFinite(ttlMs) || ttlMs <= 0) {
    throw new RangeError(`ttlMs must be a positive number, got ${ttlMs}`);
  }
  return Math.ceil(ttlMs);
}

/** Validates an increment step: integers only, like Redis INCRBY. */
export function checkStep(by: number): number {
  if (!Number.isSafeInteger(by)) throw new RangeError(`by must be an integer, got ${by}`);
  return by;
}
