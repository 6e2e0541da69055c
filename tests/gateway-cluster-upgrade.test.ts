import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisPresence, type Presence } from '@agent-backend/presence';
import { closeRedis, createRedis, redisKeys, type Redis } from '@agent-backend/redis';
import { redisTopologies } from '@agent-backend/testing';
import { startCluster, type Cluster } from './cluster.js';
import { ofType, openSocket, type TestSocket } from './ws-client.js';

/**
 * A rolling upgrade on a Redis Cluster: a node's entry still sits in the one-slot layout of the
 * versions before the per-user slots (written by a gateway not yet upgraded), and the node
 * connects to an upgraded gateway. The gateway compares the connection's order with that entry
 * too: an older attempt of the same client instance is refused (4011) and leaves the entry as it
 * was; a later one is accepted, listed once, and the old layout's entry is erased.
 */
const topologies = redisTopologies({ beforeAll, afterAll }, ['cluster']);

describe('gateway on a Redis Cluster during a rolling upgrade', () => {
  let cluster: Cluster;
  let redis: Redis;
  let presence: Presence;
  const sockets: TestSocket[] = [];

  beforeAll(async () => {
    cluster = await startCluster({
      gateways: 1,
      apis: 0,
      env: { REDIS_MODE: 'cluster', REDIS_CLUSTER_NODES: topologies.cluster.nodes.join(',') },
    });
    redis = createRedis(topologies.target('cluster'), { name: 'test-upgrade' });
    presence = createRedisPresence({ redis, prefix: cluster.prefix });
  });
  afterAll(async () => {
    for (const socket of sockets) socket.ws.terminate();
    await presence?.close();
    if (redis) await closeRedis(redis);
    await cluster?.stop();
  });

  const connect = async (user: string, order: { instance: string; seq: number }) => {
    const socket = await openSocket(
      cluster.wsUrl(0, '/ws/desktop', {
        client_id: `desktop_${user}`,
        node_id: 'pc',
        token: await cluster.token(user),
        instance_id: order.instance,
        connection_seq: String(order.seq),
      }),
    );
    sockets.push(socket);
    socket.send({ type: 'register', node_id: 'pc', node_type: 'desktop', available_tools: [] });
    return socket;
  };

  it("refuses an older connection than the old layout's entry, and erases that entry for a newer one", async () => {
    const user = 'upgrading';
    const keys = redisKeys(cluster.prefix, { cluster: true });
    const oldKey = keys.presenceUserOneSlot(user);
    // The gateway not yet upgraded holds attempt 5 of the node's client instance, and wrote it
    // as versions before the per-user slots did (the entry's format is unchanged).
    await presence.heartbeatReplica('gateway-old');
    const [seconds] = await redis.time();
    const now = Number(seconds) * 1000;
    const oldEntry = JSON.stringify([
      now + 60_000,
      now,
      now - 5_000,
      'gateway-old',
      { nodeType: 'desktop', data: { status: 'online' }, conn: ['dev-a', 5] },
    ]);
    await redis.hset(oldKey, 'pc', oldEntry);
    expect(await presence.getNode(user, 'pc')).toMatchObject({
      replicaId: 'gateway-old',
      connection: { instance: 'dev-a', seq: 5 },
    });

    // Attempt 4, processed late by the upgraded gateway.
    const stale = await connect(user, { instance: 'dev-a', seq: 4 });
    expect(await stale.closed).toMatchObject({ code: 4011 });
    expect(await redis.hget(oldKey, 'pc')).toBe(oldEntry);
    expect(await redis.exists(keys.presenceUser(user))).toBe(0);
    expect((await presence.listNodes(user)).map((e) => [e.nodeId, e.replicaId])).toEqual([
      ['pc', 'gateway-old'],
    ]);

    // Attempt 6: the upgraded gateway takes the node over.
    const later = await connect(user, { instance: 'dev-a', seq: 6 });
    await later.next(ofType('registered'));
    later.send({ type: 'ping' });
    await later.next(ofType('pong'));
    const listed = await presence.listNodes(user);
    expect(listed.map((e) => [e.nodeId, e.replicaId, e.connection])).toEqual([
      ['pc', 'gateway-1', { instance: 'dev-a', seq: 6 }],
    ]);
    expect(await redis.hexists(keys.presenceUser(user), 'pc')).toBe(1);
    expect(await redis.exists(oldKey)).toBe(0);
    // Once the node leaves, no entry of the old layout comes back from under the new one.
    later.ws.close();
    await later.closed;
    await expect.poll(() => presence.listNodes(user), { timeout: 5_000, interval: 50 }).toEqual([]);
  });
});
