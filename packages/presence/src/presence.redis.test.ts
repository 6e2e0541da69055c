import { closeRedis, createRedis, redisKeys } from '@agent-backend/redis';
import { redisTestKeys, testRedisUrl } from '@agent-backend/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Presence, PresenceOptions } from './presence.js';
import { describePresenceContract, node } from './presence.contract.js';
import { createRedisPresence } from './redis-presence.js';

const url = testRedisUrl();
const testRedis = redisTestKeys('presence', { beforeAll, afterAll });
const freshPrefix = () => testRedis.fresh();

describePresenceContract('redis', async (options) =>
  createRedisPresence({ url, prefix: freshPrefix(), ...options }),
);

describe('redis presence', () => {
  const open: Presence[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((p) => p.close()));
  });
  const replicas = (count: number, prefix: string, options: PresenceOptions = {}) =>
    Array.from({ length: count }, () => {
      const presence = createRedisPresence({ url, prefix, ...options });
      open.push(presence);
      return presence;
    });

  it('shares state between replicas and stamps times with the Redis clock', async () => {
    const [a, b] = replicas(2, freshPrefix());
    await a!.heartbeatReplica('r1');
    const [seconds, micros] = await testRedis.raw.time();
    const stored = await a!.upsertNode(node('n1'));
    const serverNow = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    expect(stored.lastSeenAt - serverNow).toBeGreaterThanOrEqual(0);
    expect(stored.lastSeenAt - serverNow).toBeLessThan(5_000);
    expect(await b!.getNode('u1', 'n1')).toEqual(stored);
    expect(await b!.liveReplicas()).toEqual(['r1']);
    expect(await b!.removeNode('u1', 'n1', { replicaId: 'r1' })).toBe(true);
    expect(await a!.listNodes('u1')).toEqual([]);
  });

  it('merges concurrent patched touches from several replicas without losing one', async () => {
    const stores = replicas(4, freshPrefix());
    await stores[0]!.heartbeatReplica('r1');
    await stores[0]!.upsertNode(node('n1', 'r1', { data: {} }));
    const touches = stores.flatMap((p, i) =>
      [0, 1, 2].map((j) => p.touchNode('u1', 'n1', { [`k${i}${j}`]: j })),
    );
    expect(await Promise.all(touches)).toEqual(touches.map(() => true));
    expect(Object.keys((await stores[1]!.getNode('u1', 'n1'))!.data)).toHaveLength(12);
  });

  it('keeps each user in one expiring hash, hides dead replicas’ entries and deletes expired ones lazily', async () => {
    const prefix = freshPrefix();
    const keys = redisKeys(prefix);
    const [p] = replicas(1, prefix, { nodeTtlMs: 5_000, replicaTtlMs: 5_000 });
    const [short] = replicas(1, prefix, { nodeTtlMs: 100, replicaTtlMs: 5_000 });
    await p!.heartbeatReplica('r1');
    await p!.upsertNode(node('n1', 'r1'));
    await p!.upsertNode(node('n2', 'dead'));
    await short!.upsertNode(node('n3', 'r1'));
    expect(await testRedis.raw.hlen(keys.presenceUser('u1'))).toBe(3);
    expect(await testRedis.raw.pttl(keys.presenceUser('u1'))).toBeGreaterThan(0);
    expect(await testRedis.raw.pttl(keys.presenceUser('u1'))).toBeLessThanOrEqual(5_000);
    await new Promise((r) => setTimeout(r, 200));
    expect((await p!.listNodes('u1')).map((e) => e.nodeId)).toEqual(['n1']);
    // n3 expired and is gone; n2 is hidden (its replica looks dead) but kept until its own TTL.
    expect((await testRedis.raw.hkeys(keys.presenceUser('u1'))).sort()).toEqual(['n1', 'n2']);
    expect(await testRedis.raw.zrange(keys.presenceReplicas(), 0, '-1')).toEqual(['r1']);
  });

  it('does not close a connection it was given', async () => {
    const redis = createRedis(url, { name: 'test-presence-given' });
    try {
      const p = createRedisPresence({ redis, prefix: freshPrefix() });
      await p.heartbeatReplica('r1');
      await p.close();
      expect(await redis.ping()).toBe('PONG');
    } finally {
      await closeRedis(redis);
    }
  });
});
