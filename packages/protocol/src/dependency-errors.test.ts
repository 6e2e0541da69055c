import { describe, expect, it } from 'vitest';
import { isDependencyUnavailable } from './dependency-errors.js';

describe('isDependencyUnavailable', () => {
  it('recognises dropped, refused and terminated connections to Redis and PostgreSQL', () => {
    const withCode = (code: string) => Object.assign(new Error('x'), { code });
    for (const code of [
      'ECONNRESET',
      'ECONNREFUSED',
      'EPIPE',
      'ETIMEDOUT',
      '57P01',
      '57P03',
      '08006',
    ])
      expect(isDependencyUnavailable(withCode(code))).toBe(true);
    expect(isDependencyUnavailable(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isDependencyUnavailable(new Error('Connection is closed.'))).toBe(true);
    expect(isDependencyUnavailable(new Error('Command timed out'))).toBe(true);
    expect(
      isDependencyUnavailable(
        new Error('Reached the max retries per request limit (which is 20).'),
      ),
    ).toBe(true);
  });

  it('leaves other errors to be 500s', () => {
    expect(isDependencyUnavailable(new Error('boom'))).toBe(false);
    expect(isDependencyUnavailable(Object.assign(new Error('x'), { code: '23505' }))).toBe(false);
    expect(isDependencyUnavailable(undefined)).toBe(false);
    expect(isDependencyUnavailable('ECONNRESET')).toBe(false);
  });
});
