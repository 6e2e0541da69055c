import { describe, expect, it } from 'vitest';
import { Backoff, resolveReconnectOptions } from './backoff.js';

describe('Backoff', () => {
  it('grows by the factor up to the maximum when there is no jitter', () => {
    const backoff = new Backoff(
      resolveReconnectOptions({ initialDelayMs: 100, maxDelayMs: 1_000, factor: 3, jitter: 0 }),
    );
    expect([1, 2, 3, 4, 5].map(() => backoff.next())).toEqual([100, 300, 900, 1_000, 1_000]);
    expect(backoff.attempt).toBe(5);
  });

  it('draws full jitter between 0 and the bound', () => {
    const draws = [0, 0.999, 0.5];
    const backoff = new Backoff(
      resolveReconnectOptions({ initialDelayMs: 1_000 }),
      () => draws.shift() ?? 0,
    );
    expect(backoff.next()).toBe(1_000);
    expect(backoff.next()).toBe(2);
    expect(backoff.next()).toBe(2_000);
  });

  it('keeps partial jitter within [bound × (1 - jitter), bound]', () => {
    const backoff = new Backoff(
      resolveReconnectOptions({ initialDelayMs: 1_000, factor: 1, jitter: 0.25 }),
    );
    for (let i = 0; i < 200; i++) {
      const delay = backoff.next();
      expect(delay).toBeGreaterThanOrEqual(750);
      expect(delay).toBeLessThanOrEqual(1_000);
    }
  });

  it('starts over after reset', () => {
    const backoff = new Backoff(resolveReconnectOptions({ initialDelayMs: 10, jitter: 0 }));
    backoff.next();
    backoff.next();
    backoff.reset();
    expect(backoff.next()).toBe(10);
  });

  it('uses documented defaults and refuses options that make no sense', () => {
    expect(resolveReconnectOptions()).toEqual({
      enabled: true,
      initialDelayMs: 500,
      maxDelayMs: 30_000,
      factor: 2,
      jitter: 1,
      stableAfterMs: 10_000,
    });
    expect(() => resolveReconnectOptions({ factor: 0.5 })).toThrow(RangeError);
    expect(() => resolveReconnectOptions({ jitter: 2 })).toThrow(RangeError);
    expect(() => resolveReconnectOptions({ initialDelayMs: 100, maxDelayMs: 10 })).toThrow(
      RangeError,
    );
    expect(() => resolveReconnectOptions({ initialDelayMs: Number.NaN })).toThrow(RangeError);
  });
});
