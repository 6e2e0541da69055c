import { closeRedis, createRedis, type Redis } from '@agent-backend/redis';
import { redisTestKeys, testRedisUrl } from '@agent-backend/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Limits, RateRule } from './limits.js';
import { describeLimitsContract } from './limits.contract.js';
import { createRedisLimits } from './redis-limits.js';

const url = testRedisUrl();
const testRedis = redisTestKeys('limits', { beforeAll, afterAll });
let redis: Redis;
beforeAll(() => {
  redis = createRedis(url, { name: 'test-limits' });
});
afterAll(() => closeRedis(redis));

describeLimitsContract('redis', async (rules, lease) =>
  createRedisLimits({ redis, prefix: testRedis.fresh(), rules, ...lease }),
);

describe('redis limits', () => {
  const open: Limits[] = [];
  const connections: Redis[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((l) => l.close()));
    await Promise.all(connections.splice(0).map((c) => closeRedis(c)));
  });
  /** Limits of independent replicas: each on its own connection, one prefix. */
  const replicas = (
    count: number,
    prefix: string,
    rules: Record<string, RateRule>,
    leaseMs?: number,
  ) =>
    Array.from({ length: count }, (_, i) => {
      const connection = createRedis(url, { name: `test-limits-${i}` });
      connections.push(connection);
      const limits = createRedisLimits({
        redis: connection,
        prefix,
        rules,
        ...(leaseMs ? { leaseMs } : {}),
      });
      open.push(limits);
      return limits;
    });

  it('holds a rate limit for all replicas together', async () => {
    const stores = replicas(3, testRedis.fresh(), { invoke: { points: 5, windowMs: 60_000 } });
    const decisions = await Promise.all(
      stores.flatMap((s) => [1, 2, 3, 4].map(() => s.consume('invoke', 'u1'))),
    );
    expect(decisions.filter((d) => d.allowed)).toHaveLength(5);
  });

  it('holds run slots for all replicas together, under <prefix>limit:runs:', async () => {
    const prefix = testRedis.fresh();
    const stores = replicas(3, prefix, {});
    const decisions = await Promise.all(
      stores.flatMap((s, i) => [0, 1].map((j) => s.acquireSlot('runs', 'u1', `r${i}-${j}`, 4))),
    );
    expect(decisions.filter((d) => d.granted)).toHaveLength(4);
    expect(await testRedis.raw.zcard(`${prefix}limit:runs:u1`)).toBe(4);
  });

  it('holds a token counter for all replicas together, under <prefix>limit:tokens:', async () => {
    const prefix = testRedis.fresh();
    const stores = replicas(2, prefix, {});
    await Promise.all(stores.map((s) => s.addToCounter('tokens:u:2026-11-27', 100, 60_000)));
    expect(await stores[0]!.addToCounter('tokens:u:2026-11-27', 0, 60_000)).toBe(200);
    expect(await testRedis.raw.get(`${prefix}limit:tokens:u:2026-11-27`)).toBe('200');
    expect(await testRedis.raw.pttl(`${prefix}limit:tokens:u:2026-11-27`)).toBeGreaterThan(0);
  });

  it('renews a held slot past its lease, and frees a slot nobody renews (a crashed replica)', async () => {
    const prefix = testRedis.fresh();
    const [alive, crashed] = replicas(2, prefix, {}, 300);
    expect((await alive!.acquireSlot('runs', 'u', 'kept', 2)).granted).toBe(true);
    expect((await crashed!.acquireSlot('runs', 'u', 'lost', 2)).granted).toBe(true);
    await crashed!.close(); // stops renewing, as a killed process does
    await vi.waitFor(
      async () => expect((await alive!.acquireSlot('runs', 'u', 'new', 2)).granted).toBe(true),
      { timeout: 5_000, interval: 50 },
    );
    expect(await alive!.acquireSlot('runs', 'u', 'more', 2)).toEqual({ granted: false, held: 2 });
  });

  it('rejects with the store error when Redis is unreachable, for the caller to decide', async () => {
    const down = createRedis('redis://127.0.0.1:1', {
      name: 'test-limits-down',
      commandTimeoutMs: 200,
      maxRetriesPerRequest: 0,
      onError: () => {},
    });
    connections.push(down);
    const limits = createRedisLimits({
      redis: down,
      prefix: testRedis.fresh(),
      rules: { invoke: { points: 5, windowMs: 60_000 } },
    });
    open.push(limits);
    await expect(limits.consume('invoke', 'u')).rejects.toThrow();
    await expect(limits.acquireSlot('runs', 'u', 'r', 1)).rejects.toThrow();
    await expect(limits.addToCounter('c', 1, 1_000)).rejects.toThrow();
  });
});
