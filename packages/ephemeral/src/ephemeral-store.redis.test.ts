import { closeRedis, createRedis, redisKeys } from '@agent-backend/redis';
import { redisTestKeys, testRedisUrl } from '@agent-backend/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { EphemeralStore } from './ephemeral-store.js';
import { describeEphemeralContract } from './ephemeral-store.contract.js';
import { createRedisEphemeralStore } from './redis-ephemeral-store.js';

const url = testRedisUrl();
const testRedis = redisTestKeys('eph', { beforeAll, afterAll });
const freshPrefix = () => testRedis.fresh();

describeEphemeralContract('redis', async () =>
  createRedisEphemeralStore({ url, prefix: freshPrefix() }),
);

describe('redis ephemeral store', () => {
  const open: EphemeralStore[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
  });
  const replicas = (count: number, prefix: string) =>
    Array.from({ length: count }, () => {
      const store = createRedisEphemeralStore({ url, prefix });
      open.push(store);
      return store;
    });

  it('shares state between independent connections, under <prefix>eph:', async () => {
    const prefix = freshPrefix();
    const [a, b] = replicas(2, prefix);
    await a!.set('shared', 'v', { ttlMs: 10_000 });
    expect(await b!.get('shared')).toBe('v');
    expect(await testRedis.raw.get(redisKeys(prefix).ephemeral('shared'))).toBe('v');
    expect(await b!.set('shared', 'w', { ifAbsent: true })).toBe(false);
  });

  it('lets exactly one replica take a value', async () => {
    const stores = replicas(5, freshPrefix());
    await stores[0]!.set('approval', 'yes');
    const taken = await Promise.all(stores.map((s) => s.take('approval')));
    expect(taken.filter((t) => t !== null)).toEqual(['yes']);
  });

  it('counts increments from all replicas in one window', async () => {
    const stores = replicas(4, freshPrefix());
    await Promise.all(
      stores.flatMap((s) => [1, 2, 3].map(() => s.increment('r', { ttlMs: 5_000 }))),
    );
    expect(await stores[0]!.get('r')).toBe('12');
  });

  it('does not close a connection it was given', async () => {
    const redis = createRedis(url, { name: 'test-ephemeral-given' });
    try {
      const store = createRedisEphemeralStore({ redis, prefix: freshPrefix() });
      await store.set('k', 'v');
      await store.close();
      expect(await redis.ping()).toBe('PONG');
    } finally {
      await closeRedis(redis);
    }
  });
});
