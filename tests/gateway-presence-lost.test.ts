import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { startTcpProxy, type TcpProxy } from '@agent-backend/testing';
import { registerDesktop, startCluster, type Cluster } from './cluster.js';
import { startOwnRedis, type OwnRedis } from './faults/redis-server.js';
import { ofType, type TestSocket } from './ws-client.js';

const REPLICA_TTL_MS = 1_500;

/**
 * One gateway and one API replica on a Redis of the test's own (optionally behind a proxy),
 * replica beats every 500 ms, node entries refreshed only every 30 s: a node listed again within
 * a few replica TTLs was rewritten by its gateway, not by its own refresh.
 */
function useLosableRedis(options: { proxied: boolean; commandTimeoutMs: number }) {
  const set = {} as { redis: OwnRedis; proxy?: TcpProxy; cluster: Cluster };
  const sockets: TestSocket[] = [];
  beforeAll(async () => {
    set.redis = await startOwnRedis();
    if (options.proxied)
      set.proxy = await startTcpProxy({ host: '127.0.0.1', port: set.redis.port });
    set.cluster = await startCluster({
      gateways: 1,
      apis: 1,
      env: {
        REDIS_URL: set.proxy ? `redis://127.0.0.1:${set.proxy.port}` : set.redis.url,
        REDIS_COMMAND_TIMEOUT_MS: String(options.commandTimeoutMs),
        GATEWAY_PING_INTERVAL_MS: '600000',
        GATEWAY_REPLICA_TTL_MS: String(REPLICA_TTL_MS),
        NODE_SILENT_TIMEOUT_MS: '90000',
      },
    });
  });
  afterAll(async () => {
    for (const socket of sockets) socket.ws.terminate();
    await set.cluster?.stop();
    await set.proxy?.close();
    await set.redis?.close();
  });

  const connectNode = async (userId: string, nodeId: string) => {
    const socket = await registerDesktop(set.cluster, 0, userId, nodeId);
    sockets.push(socket);
    return socket;
  };
  /** The user's listed node ids, sorted (undefined while the API cannot answer). */
  const listed = async (userId: string): Promise<string[] | undefined> => {
    const res = await fetch(`${set.cluster.apis[0]!.url}/node/devices?user_id=${userId}`, {
      headers: { authorization: `Bearer ${await set.cluster.token(userId)}` },
    }).catch(() => undefined);
    if (!res?.ok) return undefined;
    const { nodes } = (await res.json()) as { nodes: Array<{ node_id: string }> };
    return nodes.map((n) => n.node_id).sort();
  };
  /** Milliseconds until every user lists exactly its nodes (each once), 0 if not within 20 s. */
  const timeToList = async (nodes: Record<string, string[]>): Promise<number> => {
    const started = Date.now();
    while (Date.now() - started < 20_000) {
      const lists = await Promise.all(Object.keys(nodes).map((user) => listed(user)));
      if (Object.values(nodes).every((ids, i) => JSON.stringify(lists[i]) === JSON.stringify(ids)))
        return Date.now() - started;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return 0;
  };
  return { set, connectNode, listed, timeToList };
}

/**
 * Redis restarts empty while nodes stay connected to their gateway: the gateway's next replica
 * heartbeat finds itself gone from presence and writes every node it holds again, so they are
 * listed within about a replica heartbeat (a third of `GATEWAY_REPLICA_TTL_MS`), not at each
 * node's next spaced refresh (a third of `NODE_SILENT_TIMEOUT_MS`, 30 s here).
 */
describe('gateway presence after Redis restarts empty', () => {
  const { set, connectNode, listed, timeToList } = useLosableRedis({
    proxied: false,
    commandTimeoutMs: 500,
  });

  it('lists every connected node again within a couple of replica heartbeats, each once', async () => {
    const nodes = { ana: ['desktop_a1', 'desktop_a2'], bo: ['desktop_b1'] };
    const all = await Promise.all(
      Object.entries(nodes).flatMap(([user, ids]) => ids.map((id) => connectNode(user, id))),
    );
    expect(await listed('ana')).toEqual(nodes.ana);
    expect(await listed('bo')).toEqual(nodes.bo);
    // Idle nodes keep heartbeating with nothing changed, as clients do.
    const beats = setInterval(() => {
      for (const socket of all) socket.send({ type: 'heartbeat', status: 'online' });
    }, 200);
    try {
      await set.redis.stop();
      await set.redis.start();
      const since = await timeToList(nodes);
      // Redis takes a moment to accept connections again; then one beat (500 ms) and the write.
      expect(since).toBeGreaterThan(0);
      expect(since).toBeLessThan(4 * REPLICA_TTL_MS);
    } finally {
      clearInterval(beats);
    }
    // The nodes kept their sockets: a heartbeat is still answered.
    for (const socket of all) {
      socket.send({ type: 'heartbeat', status: 'online' });
      await socket.next(ofType('heartbeat_ack'));
    }
  });
});

/**
 * A replica heartbeat that timed out still runs once Redis answers again: on a Redis that lost
 * its data meanwhile it marks the replica live, so the next beat finds it live. The gateway
 * rewrites its nodes after any failed beat too. Here a stalled connection (the proxy holds the
 * bytes) makes the beats time out, Redis loses everything (FLUSHALL), and the held beats run
 * when the connection flows again.
 */
describe('gateway presence after its heartbeat timed out on a Redis that lost its data', () => {
  const { set, connectNode, listed, timeToList } = useLosableRedis({
    proxied: true,
    commandTimeoutMs: 400,
  });

  it('lists its nodes again soon after the connection flows', async () => {
    const nodes = { cy: ['desktop_c1', 'desktop_c2'] };
    for (const id of nodes.cy) await connectNode('cy', id);
    expect(await listed('cy')).toEqual(nodes.cy);
    set.proxy!.setMode('stall');
    // Beats every 500 ms, each timing out after 400 ms while its bytes wait in the proxy.
    await new Promise((resolve) => setTimeout(resolve, 1_600));
    const direct = new Redis(set.redis.url);
    await direct.flushall();
    direct.disconnect();
    set.proxy!.setMode('forward');
    const since = await timeToList(nodes);
    expect(since).toBeGreaterThan(0);
    expect(since).toBeLessThan(4 * REPLICA_TTL_MS);
  });
});
