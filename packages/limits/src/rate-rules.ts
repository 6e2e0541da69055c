import { RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { RateDecision, RateRule } from './limits.js';

/** rate-limiter-flexible's options for one rule: whole seconds, its unit. */
export interface LimiterRule {
  keyPrefix: string;
  points: number;
  duration: number;
}

/** One limiter per rule that is on (points > 0); rules that are off are null. */
export function rateLimiters<T>(
  rules: Readonly<Record<string, RateRule>>,
  make: (rule: LimiterRule) => T,
): Map<string, T | null> {
  const limiters = new Map<string, T | null>();
  for (const [name, rule] of Object.entries(rules)) {
    if (!Number.isInteger(rule.points) || rule.points < 0) {
      throw new RangeError(`rate limit ${name}: points must be a whole number >= 0`);
    }
    if (!(rule.windowMs >= 1_000)) {
      throw new RangeError(`rate limit ${name}: the window must be at least 1000 ms`);
    }
    const duration = Math.ceil(rule.windowMs / 1000);
    limiters.set(
      name,
      rule.points === 0 ? null : make({ keyPrefix: name, points: rule.points, duration }),
    );
  }
  return limiters;
}

/**
 * Takes one point. rate-limiter-flexible rejects with a `RateLimiterRes` when the point does not
 * fit and with the store's error when the store failed: the first is a decision, the second is
 * rethrown for the caller's failure mode.
 */
export async function consumeWith(
  limiters: Map<string, RateLimiterAbstract | null>,
  name: string,
  key: string,
): Promise<RateDecision> {
  const limiter = limiters.get(name);
  if (limiter === undefined) throw new RangeError(`no rate limit named ${name}`);
  if (limiter === null) return { allowed: true, limit: 0, remaining: 0, resetMs: 0 };
  try {
    const res = await limiter.consume(key);
    return decision(true, limiter.points, res);
  } catch (error) {
    if (error instanceof RateLimiterRes) return decision(false, limiter.points, error);
    throw error;
  }
}

function decision(allowed: boolean, limit: number, res: RateLimiterRes): RateDecision {
  return {
    allowed,
    limit,
    remaining: allowed ? Math.max(0, res.remainingPoints) : 0,
    resetMs: Math.max(0, res.msBeforeNext),
  };
}

/** Deletes `key`'s counter from every limiter; @returns how many existed. */
export async function forgetKey(
  limiters: Map<string, RateLimiterAbstract | null>,
  key: string,
): Promise<number> {
  let forgotten = 0;
  for (const limiter of limiters.values()) {
    if (limiter && (await limiter.delete(key))) forgotten += 1;
  }
  return forgotten;
}
