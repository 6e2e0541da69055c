import { RateLimiterMemory } from 'rate-limiter-flexible';
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
import { rateLimiters, consumeWith, forgetKey } from './rate-rules.js';

export interface MemoryLimitsOptions extends SlotLeaseOptions {
  /** The rate limits by name. */
  rules: Readonly<Record<string, RateRule>>;
}

/**
 * The embedded limits (when `REDIS_URL` is unset): rate-limiter-flexible's in-memory counters,
 * a map of held slots and one of counters. The embedded engine is one process, so this is the
 * deployment. A slot is freed by `release()`, or one lease after `leave()` unless taken again:
 * a crashed process takes its slots with it.
 */
class MemoryLimits implements Limits {
  private readonly limiters;
  /** Held slots by `<pool>:<userId>`. */
  private readonly slots = new Map<string, Set<string>>();
  private readonly counters = new Map<string, { value: number; endsAt: number }>();
  /** Slots left (see `SlotDecision.leave`): freed when the timer fires unless taken again. */
  private readonly leaving = new Map<string, NodeJS.Timeout>();
  private readonly leaseMs: number;
  private closed = false;

  constructor(options: MemoryLimitsOptions) {
    this.limiters = rateLimiters(options.rules, (rule) => new RateLimiterMemory(rule));
    this.leaseMs = options.leaseMs ?? DEFAULT_SLOT_LEASE_MS;
  }

  async consume(name: string, key: string) {
    this.assertOpen();
    return consumeWith(this.limiters, name, key);
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
    const leaving = `${key}\n${holderId}`;
    clearTimeout(this.leaving.get(leaving));
    this.leaving.delete(leaving);
    const slots = held;
    const free = () => {
      slots.delete(holderId);
      if (slots.size === 0 && this.slots.get(key) === slots) this.slots.delete(key);
    };
    return {
      granted: true,
      release: async () => free(),
      leave: () => {
        // Held for one lease, as a replica that stopped renewing it would leave it.
        const timer = setTimeout(() => {
          this.leaving.delete(leaving);
          free();
        }, this.leaseMs);
        timer.unref();
        this.leaving.set(leaving, timer);
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
    for (const pool of SLOT_POOLS) if (this.slots.delete(`${pool}:${userId}`)) forgotten++;
    const counters = `tokens:${userId}:`;
    for (const key of [...this.counters.keys()]) {
      if (key.startsWith(counters) && this.counters.delete(key)) forgotten++;
    }
    return forgotten + (await forgetKey(this.limiters, userId));
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.leaving.values()) clearTimeout(timer);
    this.leaving.clear();
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
