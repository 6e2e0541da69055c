import type { RateRule } from './limits.js';

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
