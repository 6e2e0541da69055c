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

  it('recognises a Redis Cluster or Sentinel failover under way (seen in tests/faults)', () => {
    for (const message of [
      'Too many Cluster redirections. Last error: ReplyError: CLUSTERDOWN The cluster is down',
      'Too many Cluster redirections. Last error: ReplyError: MOVED 7951 127.0.0.1:21664',
      'CLUSTERDOWN The cluster is down',
      'TRYAGAIN Multiple keys request during rehashing of slot',
      "READONLY You can't write against a read only replica.",
      'MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to no',
      'LOADING Redis is loading the dataset in memory',
      'Failed to refresh slots cache.',
      'None of startup nodes is available',
    ])
      expect(isDependencyUnavailable(new Error(message))).toBe(true);
  });

  it('leaves other errors to be 500s', () => {
    expect(isDependencyUnavailable(new Error('boom'))).toBe(false);
    expect(isDependencyUnavailable(new Error('ERR unknown command'))).toBe(false);
    expect(isDependencyUnavailable(new Error('NOSCRIPT No matching script'))).toBe(false);
    expect(isDependencyUnavailable(Object.assign(new Error('x'), { code: '23505' }))).toBe(false);
    expect(isDependencyUnavailable(undefined)).toBe(false);
    expect(isDependencyUnavailable('ECONNRESET')).toBe(false);
  });
});
