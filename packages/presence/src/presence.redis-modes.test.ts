import { closeRedis, createRedis, redisKeys, type Redis } from '@agent-backend/redis';
import {
  clusterKeySlot,
  REDIS_TOPOLOGIES,
  redisTopologies,
  slotOwner,
  uniquePrefix,
} from '@agent-backend/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { LIVE_REPLICAS_MAX_AGE_MS } from './live-replicas-cache.js';
import type { Presence } from './presence.js';
import { describePresenceContract, node } from './presence.contract.js';
import { entryScripts } from './presence-scripts.js';
import { createRedisPresence } from './redis-presence.js';

/** The presence contract on a Redis Cluster (hash-tagged keys) and on a Sentinel-managed master. */
const topologies = redisTopologies({ beforeAll, afterAll });
const connections: Redis[] = [];
afterEach(async () => {
  await Promise.all(connections.splice(0).map((c) => closeRedis(c)));
});

for (const mode of REDIS_TOPOLOGIES) {
  describePresenceContract(`redis ${mode}`, async (options) => {
    const redis = createRedis(topologies.target(mode), { name: `test-presence-${mode}` });
    connections.push(redis);
    return createRedisPresence({ redis, prefix: uniquePrefix('presence'), ...options });
  });
}

describe('redis presence on a Cluster: a slot per user', () => {
  const open: Presence[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((p) => p.close()));
  });
  const setup = (count: number) => {
    const redis = createRedis(topologies.target('cluster'), { name: 'test-presence-slots' });
    connections.push(redis);
    const prefix = uniquePrefix('presence');
    const stores = Array.from({ length: count }, () => {
      const presence = createRedisPresence({ redis, prefix });
      open.push(presence);
      return presence;
    });
    return { redis, prefix, keys: redisKeys(prefix, { cluster: true }), stores };
  };
  const port = () => topologies.cluster.processes[0]!.port;

  it('puts users in slots of their own, on several masters, and lists and erases each', async () => {
    const { redis, keys, stores } = setup(1);
    const [p] = stores as [Presence];
    // Users until two of them sit on different masters (with one slot for all, never).
    const users: { userId: string; master: string }[] = [];
    for (let i = 0; i < 64 && new Set(users.map((u) => u.master)).size < 2; i++) {
      const userId = `user-${i}`;
      const slot = await clusterKeySlot(port(), keys.presenceUser(userId));
      users.push({ userId, master: (await slotOwner(port(), slot))!.id });
    }
    const first = users[0]!;
    const other = users.find((u) => u.master !== first.master);
    if (!other) expect.fail(`${users.length} users, all in the slots of one master`);
    const slots = await Promise.all(
      [first, other].map((u) => clusterKeySlot(port(), keys.presenceUser(u.userId))),
    );
    expect(slots[0]).not.toBe(slots[1]);
    expect(slots).not.toContain(await clusterKeySlot(port(), keys.presenceReplicas()));
    await p.heartbeatReplica('r1');
    for (const { userId } of [first, other]) {
      await p.upsertNode(node('n1', 'r1', { userId }));
      await p.upsertNode(node('n2', 'r1', { userId }));
      expect(await redis.hlen(keys.presenceUser(userId))).toBe(2);
    }
    for (const { userId } of [first, other]) {
      expect((await p.listNodes(userId)).map((e) => e.nodeId)).toEqual(['n1', 'n2']);
      expect(await p.touchNode(userId, 'n1', { seen: true })).toBe(true);
      expect(await p.removeNode(userId, 'n1', { replicaId: 'r1' })).toBe(true);
    }
    expect(await p.removeUser(first.userId)).toBe(1);
    expect(await redis.exists(keys.presenceUser(first.userId))).toBe(0);
    expect((await p.listNodes(other.userId)).map((e) => e.nodeId)).toEqual(['n2']);
    expect(await p.removeUser(other.userId)).toBe(1);
    expect(await redis.exists(keys.presenceUser(other.userId))).toBe(0);
  });

  it('shows the nodes of a replica at once after its first beat, to a store whose list is warm', async () => {
    const { stores } = setup(2);
    const [a, b] = stores as [Presence, Presence];
    await b.heartbeatReplica('rb');
    await b.upsertNode(node('n1', 'rb'));
    expect((await b.listNodes('u1')).map((e) => e.nodeId)).toEqual(['n1']);
    // `b`'s list of live replicas is a few ms old; `ra` is not in it.
    expect(await a.heartbeatReplica('ra')).toBe(false);
    await a.upsertNode(node('n2', 'ra', { connection: { instance: 'i', seq: 1 } }));
    expect((await b.listNodes('u1')).map((e) => e.nodeId)).toEqual(['n1', 'n2']);
    expect(await b.getNode('u1', 'n2')).toMatchObject({ replicaId: 'ra' });
    // Nothing that decides on visibility trusts the old list: no delete, no skipped check.
    expect(
      await b.upsertNode(node('n2', 'rb', { connection: { instance: 'i', seq: 0 } })),
    ).toMatchObject({ replicaId: 'ra' });
    expect(await b.removeNode('u1', 'n2', { replicaId: 'rb' })).toBe(false);
    expect(await b.touchNode('u1', 'n2')).toBe(true);
    expect(await a.getNode('u1', 'n2')).toMatchObject({ replicaId: 'ra' });
  });

  it('hides the nodes of a replica another store removed once its list is read again, long before the TTL', async () => {
    const { stores } = setup(2);
    const [a, b] = stores as [Presence, Presence];
    await a.heartbeatReplica('ra');
    await a.upsertNode(node('n1', 'ra'));
    expect((await b.listNodes('u1')).map((e) => e.nodeId)).toEqual(['n1']);
    const removedAt = Date.now();
    await a.removeReplica('ra');
    expect(await a.listNodes('u1')).toEqual([]);
    // `b` may show it while its list is younger than LIVE_REPLICAS_MAX_AGE_MS, not 15 s (the TTL).
    await vi.waitFor(async () => expect(await b.listNodes('u1')).toEqual([]), {
      timeout: 5_000,
      interval: 20,
    });
    expect(Date.now() - removedAt).toBeLessThan(LIVE_REPLICAS_MAX_AGE_MS + 2_000);
  });

  it('reads and erases what an older version stored in the one-slot layout (rolling upgrade)', async () => {
    const { redis, keys, stores } = setup(1);
    const [p] = stores as [Presence];
    await p.heartbeatReplica('r-old');
    await p.heartbeatReplica('r-new');
    // Written as versions before the per-user slots did: their script, their key.
    const oldKey = keys.presenceUserOneSlot('u1');
    expect(oldKey).not.toBe(keys.presenceUser('u1'));
    const oldUpsert = (nodeId: string, data: object, conn?: [string, number]) =>
      entryScripts('key').upsert(
        redis,
        [oldKey, keys.presenceReplicas()],
        [
          nodeId,
          60_000,
          '1000',
          `"r-old",${JSON.stringify({ nodeType: 'desktop', data, ...(conn ? { conn } : {}) })}]`,
          ...(conn ?? ['', '']),
        ],
      );
    await oldUpsert('n-old', { v: 'old' });
    await oldUpsert('n-both', { v: 'old' });
    expect(await p.getNode('u1', 'n-old')).toMatchObject({
      replicaId: 'r-old',
      data: { v: 'old' },
    });
    // The node reconnected to an upgraded gateway: the new layout wins, the old entry is erased.
    await p.upsertNode(node('n-both', 'r-new', { data: { v: 'new' } }));
    expect(await redis.hexists(keys.presenceUser('u1'), 'n-both')).toBe(1);
    expect(await redis.hexists(oldKey, 'n-both')).toBe(0);
    const listed = await p.listNodes('u1');
    expect(listed.map((e) => [e.nodeId, e.replicaId, e.data])).toEqual([
      ['n-old', 'r-old', { v: 'old' }],
      ['n-both', 'r-new', { v: 'new' }],
    ]);
    expect(await p.getNode('u1', 'n-both')).toMatchObject({ replicaId: 'r-new' });
    // A later connection of the instance in the old layout wins the compare: nothing is written.
    await oldUpsert('n-later', { v: 'old' }, ['dev-a', 5]);
    const refused = node('n-later', 'r-new', { connection: { instance: 'dev-a', seq: 4 } });
    expect(await p.upsertNode(refused)).toMatchObject({
      replicaId: 'r-old',
      connection: { instance: 'dev-a', seq: 5 },
    });
    expect(await redis.hexists(keys.presenceUser('u1'), 'n-later')).toBe(0);
    expect(await redis.hexists(oldKey, 'n-later')).toBe(1);
    const taken = node('n-later', 'r-new', { connection: { instance: 'dev-a', seq: 6 } });
    expect(await p.upsertNode(taken)).toMatchObject({ replicaId: 'r-new' });
    expect(await redis.hexists(oldKey, 'n-later')).toBe(0);
    expect(await p.removeNode('u1', 'n-later', { replicaId: 'r-new' })).toBe(true);
    expect(await p.getNode('u1', 'n-later')).toBeNull();
    // The old gateway's cleanup, through an upgraded store.
    expect(await p.removeNode('u1', 'n-old', { replicaId: 'r-old' })).toBe(true);
    expect(await redis.hexists(oldKey, 'n-old')).toBe(0);
    // Erasure leaves nothing in either layout.
    await oldUpsert('n-old2', {});
    expect(await p.removeUser('u1')).toBe(2);
    expect(await redis.exists(oldKey)).toBe(0);
    expect(await redis.exists(keys.presenceUser('u1'))).toBe(0);
    expect(await p.listNodes('u1')).toEqual([]);
  });
});
