import { randomId, startTestRedisSentinel, type TestRedisSentinel } from '@agent-backend/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { closeRedis, createRedis, duplicateRedis } from './connection.js';
import type { RedisTarget } from './target.js';

/** A Sentinel group whose sentinels require a password (`requirepass`); the servers do not. */
const PASSWORD = `pw-${randomId()}`;
let group: TestRedisSentinel;

beforeAll(async () => {
  group = await startTestRedisSentinel('abguarded', { sentinelPassword: PASSWORD });
}, 60_000);
afterAll(() => group?.stop());

const target = (sentinelPassword?: string): RedisTarget => ({
  mode: 'sentinel',
  url: `redis://${group.sentinels[0]!}`,
  sentinels: group.sentinels,
  name: group.name,
  ...(sentinelPassword ? { sentinelPassword } : {}),
});

it('does not reach the master through sentinels that refuse it, and says why', async () => {
  const errors: Error[] = [];
  const redis = createRedis(target(), {
    name: `test-sentinel-nopass-${randomId()}`,
    commandTimeoutMs: 1_000,
    onError: (error) => errors.push(error),
  });
  try {
    await expect(redis.ping()).rejects.toThrow();
    expect(redis.status).not.toBe('ready');
    expect(errors.map((e) => e.message).join('\n')).toMatch(/NOAUTH|Authentication/i);
  } finally {
    await closeRedis(redis);
  }
}, 30_000);

it('finds the master with the sentinels’ password, and follows a failover with it', async () => {
  // A backoff of two minutes: only the sentinels' +switch-master, heard by the wake-up watch on
  // its own password-authenticated connections, can bring these back in time.
  const redis = createRedis(target(PASSWORD), {
    name: `test-sentinel-pass-${randomId()}`,
    maxRetriesPerRequest: null,
    onError: () => undefined,
    redisOptions: { retryStrategy: () => 120_000 },
  });
  const copy = duplicateRedis(redis);
  try {
    await redis.set('guarded', 'before');
    expect(await copy.get('guarded')).toBe('before');
    await group.master.kill();
    expect(await redis.set('guarded', 'after')).toBe('OK');
    expect(await copy.get('guarded')).toBe('after');
  } finally {
    await Promise.all([closeRedis(redis), closeRedis(copy)]);
  }
}, 45_000);
