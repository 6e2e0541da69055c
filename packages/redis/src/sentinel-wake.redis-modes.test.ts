import { randomId, redisTopologies } from '@agent-backend/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { closeRedis, createRedis, duplicateRedis } from './connection.js';

/** Its own Sentinel group: the test kills the master. */
const topologies = redisTopologies({ beforeAll, afterAll }, ['sentinel']);

it('reconnects at the promotion, not when its reconnect backoff next fires', async () => {
  const { sentinel } = topologies;
  // A backoff of two minutes: only the sentinels' +switch-master can bring these back in time.
  const redis = createRedis(topologies.target('sentinel'), {
    name: `test-wake-${randomId()}`,
    maxRetriesPerRequest: null,
    onError: () => undefined,
    redisOptions: { retryStrategy: () => 120_000 },
  });
  const copy = duplicateRedis(redis);
  try {
    await redis.set('wake', 'before');
    expect(await copy.get('wake')).toBe('before');
    await sentinel.master.kill();
    // Queued while the master is gone, sent to the promoted replica. The failover takes seconds
    // (down-after-milliseconds 1 s, the election); waiting for the backoff would outlast the test.
    expect(await redis.set('wake', 'after')).toBe('OK');
    expect(await copy.get('wake')).toBe('after');
  } finally {
    await Promise.all([closeRedis(redis), closeRedis(copy)]);
  }
}, 45_000);
