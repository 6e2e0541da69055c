import { RateLimiterMemory } from 'rate-limiter-flexible';
import {
  LimitsClosedError,
  type Limits,
  type RateRule,
  type SlotDecision,
  type SlotLeaseOptions,
} from './limits.js';
import { rateLimiters, consumeWith, forgetKey } from './rate-rules.js';

export interface MemoryLimitsOptions extends SlotLeaseOptions {
  /** The rate limits by name. */
  rules: Readonly<Record<string, RateRule>>;
}

/**
 * The embedded limits (when `REDIS_URL` is unset): rate-limiter-flexible's in-memory counters
 * and a map of held run slots. The embedded engine is one process, so this is the deployment.
 * A slot is freed by `release()` only: a crashed process takes its slots with it.
 */
class MemoryLimits implements Limits {
  private readonly limiters;
  private readonly slots = new Map<string, Set<string>>();
  private closed = false;

  constructor(options: MemoryLimitsOptions) {
    this.limiters = rateLimiters(options.rules, (rule) => new RateLimiterMemory(rule));
  }

  async consume(name: string, key: string) {
    this.assertOpen();
    return consumeWith(this.limiters, name, key);
  }

  async acquireRunSlot(userId: string, runId: string, max: number): Promise<SlotDecision> {
    this.assertOpen();
    let held = this.slots.get(userId);
    if (!held) this.slots.set(userId, (held = new Set()));
    if (!held.has(runId) && held.size >= max) return { granted: false, held: held.size };
    held.add(runId);
    const slots = held;
    return {
      granted: true,
      release: async () => {
        slots.delete(runId);
        if (slots.size === 0 && this.slots.get(userId) === slots) this.slots.delete(userId);
      },
    };
  }

  async forgetUser(userId: string): Promise<number> {
    this.assertOpen();
    const slots = this.slots.delete(userId) ? 1 : 0;
    return slots + (await forgetKey(this.limiters, userId));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.slots.clear();
  }

  private assertOpen(): void {
    if (this.closed) throw new LimitsClosedError();
  }
}

export function createMemoryLimits(options: MemoryLimitsOptions): Limits {
  return new MemoryLimits(options);
}
