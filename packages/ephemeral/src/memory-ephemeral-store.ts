import type { EphemeralStore, SetOptions } from './ephemeral-store.js';
import { EphemeralClosedError, EphemeralNotIntegerError, checkStep, checkTtl } from './errors.js';

export interface MemoryEphemeralStoreOptions {
  /** Clock in epoch ms; tests inject a fake one to expire keys without waiting. @default Date.now */
  now?: () => number;
  /**
   * How often expired keys are swept out of memory. Expiry itself is checked on every read, so
   * this only bounds memory held by keys nobody reads again. @default 60_000
   */
  sweepIntervalMs?: number;
}

interface Entry {
  value: string;
  /** Epoch ms, or null for no expiry. */
  expiresAt: number | null;
}

/**
 * The embedded ephemeral store (used when `REDIS_URL` is unset): a Map with lazy expiry.
 * Single-threaded JavaScript makes every operation atomic, which is the contract.
 */
class MemoryEphemeralStore implements EphemeralStore {
  private readonly entries = new Map<string, Entry>();
  private readonly now: () => number;
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;

  constructor(options: MemoryEphemeralStoreOptions) {
    this.now = options.now ?? Date.now;
    this.sweeper = setInterval(() => this.sweep(), options.sweepIntervalMs ?? 60_000);
    this.sweeper.unref();
  }

  async set(key: string, value: string, options: SetOptions = {}): Promise<boolean> {
    this.assertOpen();
    const ttl = options.ttlMs === undefined ? null : checkTtl(options.ttlMs);
    if (options.ifAbsent && this.live(key)) return false;
    this.entries.set(key, { value, expiresAt: ttl === null ? null : this.now() + ttl });
    return true;
  }

  async get(key: string): Promise<string | null> {
    this.assertOpen();
    return this.live(key)?.value ?? null;
  }

  async delete(key: string): Promise<boolean> {
    this.assertOpen();
    const existed = this.live(key) !== undefined;
    this.entries.delete(key);
    return existed;
  }

  async take(key: string): Promise<string | null> {
    this.assertOpen();
    const entry = this.live(key);
    this.entries.delete(key);
    return entry?.value ?? null;
  }

  async increment(key: string, options: { ttlMs: number; by?: number }): Promise<number> {
    this.assertOpen();
    const ttl = checkTtl(options.ttlMs);
    const by = checkStep(options.by ?? 1);
    const entry = this.live(key);
    if (entry && !/^-?\d+$/.test(entry.value)) throw new EphemeralNotIntegerError(key);
    const value = (entry ? Number(entry.value) : 0) + by;
    const expiresAt = entry?.expiresAt ?? this.now() + ttl;
    this.entries.set(key, { value: String(value), expiresAt });
    return value;
  }

  async ttl(key: string): Promise<number | null> {
    this.assertOpen();
    const expiresAt = this.live(key)?.expiresAt;
    return expiresAt == null ? null : expiresAt - this.now();
  }

  async keysWithPrefix(prefix: string): Promise<string[]> {
    this.assertOpen();
    return [...this.entries.keys()].filter((key) => key.startsWith(prefix) && this.live(key));
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    this.entries.clear();
  }

  /** The entry if it exists and has not expired; deletes it when expired. */
  private live(key: string): Entry | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt !== null && entry.expiresAt <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }

  private sweep(): void {
    for (const key of this.entries.keys()) this.live(key);
  }

  private assertOpen(): void {
    if (this.closed) throw new EphemeralClosedError();
  }
}

/** An in-process {@link EphemeralStore}; state is per process and lost on exit. */
export function createMemoryEphemeralStore(
  options: MemoryEphemeralStoreOptions = {},
): EphemeralStore {
  return new MemoryEphemeralStore(options);
}
