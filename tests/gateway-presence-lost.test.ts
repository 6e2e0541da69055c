import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { startTcpProxy, type TcpProxy } from '@agent-backend/testing';
import { registerDesktop, startCluster, type Cluster } from './cluster.js';
import { startOwnRedis, type OwnRedis } from './faults/redis-server.js';
import { ofType, type TestSocket } from './ws-client.js';

/**
 * Redis restarts empty while nodes stay connected to their gateway: the gateway's next replica
 * heartbeat finds itself gone from presence and writes every node it holds again, so they are
 * listed within about a replica heartbeat (a third of `GATEWAY_REPLICA_TTL_MS`), not at each
 * node's next spaced refresh (a third of `NODE_SILENT_TIMEOUT_MS`, 30 s here).
 */
describe('gateway presence after Redis restarts empty', () => {
  const REPLICA_TTL_MS = 1_500;
  let redis: OwnRedis;
  let cluster: Cluster;
  const sockets: TestSocket[] = [];
  beforeAll(async () => {
    redis = await startOwnRedis();
    cluster = await startCluster({
      gateways: 1,
      apis: 1,
      env: {
        REDIS_URL: redis.url,
        REDIS_COMMAND_TIMEOUT_MS: '500',
        GATEWAY_PING_INTERVAL_MS: '600000',
        GATEWAY_REPLICA_TTL_MS: String(REPLICA_TTL_MS),
        NODE_SILENT_TIMEOUT_MS: '90000',
      },
    });
  });
  afterAll(async () => {
    for (const socket of sockets) socket.ws.terminate();
    await cluster?.stop();
    await redis?.close();
  });

  const connectNode = async (userId: string, nodeId: string) => {
    const socket = await registerDesktop(cluster, 0, userId, nodeId);
    sockets.push(socket);
    return socket;
  };
  const listed = async (userId: string): Promise<string[] | undefined> => {
    const res = await fetch(`${cluster.apis[0]!.url}/node/devices?user_id=${userId}`, {
      headers: { authorization: `Bearer ${await cluster.token(userId)}` },
    }).catch(() => undefined);
    if (!res?.ok) return undefined;
    const { nodes } = (await res.json()) as { nodes: Array<{ node_id: string }> };
    return nodes.map((n) => n.node_id).sort();
  };

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
      await redis.stop();
      await redis.start();
      const started = Date.now();
      let since = 0;
      while (Date.now() - started < 20_000) {
        const [ana, bo] = [await listed('ana'), await listed('bo')];
        if (
          JSON.stringify(ana) === JSON.stringify(nodes.ana) &&
          JSON.stringify(bo) === JSON.stringify(nodes.bo)
        ) {
          since = Date.now() - started;
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
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
  const REPLICA_TTL_MS = 1_500;
  let redis: OwnRedis;
  let proxy: TcpProxy;
  let cluster: Cluster;
  const sockets: TestSocket[] = [];
  beforeAll(async () => {
    redis = await startOwnRedis();
    proxy = await startTcpProxy({ host: '127.0.0.1', port: redis.port });
    cluster = await startCluster({
      gateways: 1,
      apis: 1,
      env: {
        REDIS_URL: `redis://127.0.0.1:${proxy.port}`,
        REDIS_COMMAND_TIMEOUT_MS: '400',
        GATEWAY_PING_INTERVAL_MS: '600000',
        GATEWAY_REPLICA_TTL_MS: String(REPLICA_TTL_MS),
        NODE_SILENT_TIMEOUT_MS: '90000',
      },
    });
  });
  afterAll(async () => {
    for (const socket of sockets) socket.ws.terminate();
    await cluster?.stop();
    await proxy?.close();
    await redis?.close();
  });

  it('lists its nodes again soon after the connection flows', async () => {
    for (const id of ['desktop_c1', 'desktop_c2'])
      sockets.push(await registerDesktop(cluster, 0, 'cy', id));
    const listed = async (): Promise<string[] | undefined> => {
      const res = await fetch(`${cluster.apis[0]!.url}/node/devices?user_id=cy`, {
        headers: { authorization: `Bearer ${await cluster.token('cy')}` },
      }).catch(() => undefined);
      if (!res?.ok) return undefined;
      const { nodes } = (await res.json()) as { nodes: Array<{ node_id: string }> };
      return nodes.map((n) => n.node_id).sort();
    };
    expect(await listed()).toEqual(['desktop_c1', 'desktop_c2']);
    proxy.setMode('stall');
    // Beats every 500 ms, each timing out after 400 ms while its bytes wait in the proxy.
    await new Promise((resolve) => setTimeout(resolve, 1_600));
    const direct = new Redis(redis.url);
    await direct.flushall();
    direct.disconnect();
    proxy.setMode('forward');
    const started = Date.now();
    let since = 0;
    while (Date.now() - started < 20_000) {
      if (JSON.stringify(await listed()) === JSON.stringify(['desktop_c1', 'desktop_c2'])) {
        since = Date.now() - started;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(since).toBeGreaterThan(0);
    expect(since).toBeLessThan(4 * REPLICA_TTL_MS);
  });
});
