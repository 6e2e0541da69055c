import {
  DEFAULT_SLOT_LEASE_MS,
  SLOT_POOLS,
  LimitsClosedError,
  type Limits,
  type RateRule,
  type SlotDecision,
  type SlotLeaseOptions,
  type SlotPool,
} from './limits.js';
import { MemoryRates } from './memory-rates.js';

export interface MemoryLimitsOptions extends SlotLeaseOptions {
  /** The rate limits by name. */
  rules: Readonly<Record<string, RateRule>>;
}

/** One acquisition of a slot; a newer one of the same holder replaces it. */
interface Holding {
  /** Set by `leave()`: frees the slot one lease later. */
  timer?: NodeJS.Timeout;
}

/**
 * The embedded limits (when `REDIS_URL` is unset): rate-limiter-flexible's in-memory counters
 * ({@link MemoryRates}), a map of held slots and one of counters. The embedded engine is one
 * process, so this is the deployment. A slot is freed by `release()`, or one lease after
 * `leave()` unless taken again: a crashed process takes its slots with it.
 */
class MemoryLimits implements Limits {
  private readonly rates: MemoryRates;
  /** Held slots by `<pool>:<userId>`. */
  private readonly slots = new Map<string, Set<string>>();
  private readonly counters = new Map<string, { value: number; endsAt: number }>();
  /**
   * The latest acquisition of each held slot by `<pool>:<userId>\n<holderId>`: only its
   * decision frees or leaves the slot (see `SlotDecision.release`).
   */
  private readonly holdings = new Map<string, Holding>();
  private readonly leaseMs: number;
  private closed = false;

  constructor(options: MemoryLimitsOptions) {
    this.rates = new MemoryRates(options.rules);
    this.leaseMs = options.leaseMs ?? DEFAULT_SLOT_LEASE_MS;
  }

  async consume(name: string, key: string) {
    this.assertOpen();
    return this.rates.consume(name, key);
  }

  async acquireSlot(
    pool: SlotPool,
    userId: string,
    holderId: string,
    max: number,
  ): Promise<SlotDecision> {
    this.assertOpen();
    const key = `${pool}:${userId}`;
    let held = this.slots.get(key);
    if (!held) this.slots.set(key, (held = new Set()));
    if (!held.has(holderId) && held.size >= max) return { granted: false, held: held.size };
    held.add(holderId);
    const id = `${key}\n${holderId}`;
    // Taken again: the previous acquisition's leave no longer frees it.
    clearTimeout(this.holdings.get(id)?.timer);
    const holding: Holding = {};
    this.holdings.set(id, holding);
    const slots = held;
    const current = () => this.holdings.get(id) === holding;
    const free = () => {
      if (!current()) return;
      clearTimeout(holding.timer);
      this.holdings.delete(id);
      slots.delete(holderId);
      if (slots.size === 0 && this.slots.get(key) === slots) this.slots.delete(key);
    };
    return {
      granted: true,
      release: async () => free(),
      leave: () => {
        if (!current() || holding.timer) return;
        // Held for one lease, as a replica that stopped renewing it would leave it.
        holding.timer = setTimeout(free, this.leaseMs);
        holding.timer.unref();
      },
    };
  }

  async addToCounter(key: string, amount: number, ttlMs: number): Promise<number> {
    this.assertOpen();
    const now = Date.now();
    let counter = this.counters.get(key);
    if (counter && counter.endsAt <= now) {
      this.counters.delete(key);
      counter = undefined;
    }
    if (amount === 0) return counter?.value ?? 0;
    if (!counter) {
      // Ended counters are dropped as new ones start, so the map holds about one day's users.
      for (const [other, { endsAt }] of this.counters)
        if (endsAt <= now) this.counters.delete(other);
      this.counters.set(key, (counter = { value: 0, endsAt: 0 }));
    }
    counter.value += amount;
    counter.endsAt = now + ttlMs;
    return counter.value;
  }

  async forgetUser(userId: string): Promise<number> {
    this.assertOpen();
    let forgotten = 0;
    for (const pool of SLOT_POOLS) {
      const key = `${pool}:${userId}`;
      if (this.slots.delete(key)) forgotten++;
      for (const [id, holding] of this.holdings) {
        if (!id.startsWith(`${key}\n`)) continue;
        clearTimeout(holding.timer);
        this.holdings.delete(id);
      }
    }
    const counters = `tokens:${userId}:`;
    for (const key of [...this.counters.keys()]) {
      if (key.startsWith(counters) && this.counters.delete(key)) forgotten++;
    }
    return forgotten + (await this.rates.forget(userId));
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const holding of this.holdings.values()) clearTimeout(holding.timer);
    this.holdings.clear();
    this.slots.clear();
    this.counters.clear();
  }

  private assertOpen(): void {
    if (this.closed) throw new LimitsClosedError();
  }
}

export function createMemoryLimits(options: MemoryLimitsOptions): Limits {
  return new MemoryLimits(options);
}
