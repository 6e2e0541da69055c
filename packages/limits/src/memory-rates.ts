import type * as Flexible from 'rate-limiter-flexible';
import type { RateDecision, RateRule } from './limits.js';
import { rateLimiters, type LimiterRule } from './rate-rules.js';

/**
 * rate-limiter-flexible (36 modules), loaded once per process by the first point an embedded
 * engine takes: the distributed limits (Redis) never use it, so the split roles never load it,
 * and an embedded all-in-one loads it with its first rate-limited request (docs/BENCHMARKS.md,
 * "Footprint").
 */
let flexible: Promise<typeof Flexible> | undefined;
const loadFlexible = () => (flexible ??= import('rate-limiter-flexible'));

interface Limiters {
  readonly byName: Map<string, Flexible.RateLimiterMemory | null>;
  readonly RateLimiterRes: typeof Flexible.RateLimiterRes;
}

const NO_LIMIT: RateDecision = { allowed: true, limit: 0, remaining: 0, resetMs: 0 };

/**
 * The embedded engine's request rates: rate-limiter-flexible's in-memory counters, one per rule
 * that is on. The rules are checked when this is made (a bad rule fails the start); the package
 * and its counters come with the first point taken of a rule that is on.
 */
export class MemoryRates {
  private readonly rules: Map<string, LimiterRule | null>;
  private limiters: Promise<Limiters> | undefined;

  constructor(rules: Readonly<Record<string, RateRule>>) {
    this.rules = rateLimiters(rules, (rule) => rule);
  }

  /**
   * Takes one point. rate-limiter-flexible rejects with a `RateLimiterRes` when the point does not
   * fit and with the store's error when the store failed: the first is a decision, the second is
   * rethrown for the caller's failure mode.
   */
  async consume(name: string, key: string): Promise<RateDecision> {
    const rule = this.rules.get(name);
    if (rule === undefined) throw new RangeError(`no rate limit named ${name}`);
    if (rule === null) return NO_LIMIT;
    const { byName, RateLimiterRes } = await (this.limiters ??= this.load());
    const limiter = byName.get(name)!;
    try {
      const res = await limiter.consume(key);
      return decision(true, limiter.points, res);
    } catch (error) {
      if (error instanceof RateLimiterRes) return decision(false, limiter.points, error);
      throw error;
    }
  }

  /** Deletes `key`'s counter from every limiter; @returns how many existed. */
  async forget(key: string): Promise<number> {
    // No point taken yet: nothing to forget, and nothing to load for it.
    if (!this.limiters) return 0;
    let forgotten = 0;
    for (const limiter of (await this.limiters).byName.values()) {
      if (limiter && (await limiter.delete(key))) forgotten += 1;
    }
    return forgotten;
  }

  private async load(): Promise<Limiters> {
    const { RateLimiterMemory, RateLimiterRes } = await loadFlexible();
    const byName = new Map<string, Flexible.RateLimiterMemory | null>();
    for (const [name, rule] of this.rules) byName.set(name, rule && new RateLimiterMemory(rule));
    return { byName, RateLimiterRes };
  }
}

function decision(allowed: boolean, limit: number, res: Flexible.RateLimiterRes): RateDecision {
  return {
    allowed,
    limit,
    remaining: allowed ? Math.max(0, res.remainingPoints) : 0,
    resetMs: Math.max(0, res.msBeforeNext),
  };
}
