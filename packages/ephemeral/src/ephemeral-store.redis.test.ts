import { closeRedis, createRedis, redisKeys, type Redis } from '@agent-backend/redis';
import { testRedisUrl, uniquePrefix } from '@agent-backend/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { EphemeralStore } from './ephemeral-store.js';
import { describeEphemeralContract } from './ephemeral-store.contract.js';
import { createRedisEphemeralStore } from './redis-ephemeral-store.js';

const url = testRedisUrl();
let raw: Redis;
const prefixes: string[] = [];

beforeAll(() => {
  raw = createRedis(url, { name: 'test-ephemeral-raw' });
});
afterAll(async () => {
  for (const prefix of prefixes) {
    for (let cursor = '0'; ;) {
      const [next, keys] = await raw.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await raw.del(...keys);
      if ((cursor = next) === '0') break;
    }
  }
  await closeRedis(raw);
});

function freshPrefix(): string {
  const prefix = uniquePrefix('eph');
  prefixes.push(prefix);
  return prefix;
}

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
    expect(await raw.get(redisKeys(prefix).ephemeral('shared'))).toBe('v');
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
