import { BusRemoteError, createRedisBus } from '@agent-backend/bus';
import { PRESENCE_CHANGES_CHANNEL, gatewayChannel } from '@agent-backend/node-rpc';
import { testRedisUrl } from '@agent-backend/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './cluster.js';
import { json, post } from './helpers.js';
import { ofType, openSocket, type TestSocket } from './ws-client.js';

/**
 * The API replicas' cached routes to nodes (packages/node-rpc/src/route-cache.ts), across two
 * API replicas and three gateways: a node that moves, disconnects, or loses its gateway to
 * SIGKILL between two calls of the same caller.
 */
describe('routes to nodes across replicas', () => {
  let cluster: Cluster;
  const sockets: TestSocket[] = [];

  /** The node `nodeId` of `userId` on a gateway, answering each call with the gateway's index. */
  const node = async (gateway: number, userId: string, nodeId: string) => {
    const socket = await openSocket(
      cluster.wsUrl(gateway, '/ws/desktop', {
        client_id: `desktop_${userId}`,
        node_id: nodeId,
        token: await cluster.token(userId),
      }),
    );
    sockets.push(socket);
    const calls: string[] = [];
    socket.ws.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as Record<string, unknown>;
      if (frame.method !== 'tools/call') return;
      calls.push(String(frame.id));
      const text = `gateway ${gateway}`;
      socket.send({ jsonrpc: '2.0', id: frame.id, result: { content: [{ type: 'text', text }] } });
    });
    socket.send({ type: 'ping' });
    await socket.next(ofType('pong'));
    return { socket, calls };
  };
  const callTool = async (api: number, userId: string, nodeId: string) =>
    json(
      await post(
        `${cluster.apis[api]!.url}/node/tools/call`,
        { node_type: 'desktop', node_id: nodeId, tool_name: 'x' },
        { authorization: `Bearer ${await cluster.token(userId)}` },
      ),
    );
  const answeredBy = (gateway: number) => ({
    status: 200,
    body: { success: true, text: `gateway ${gateway}`, images: [] },
  });

  beforeAll(async () => {
    cluster = await startCluster({
      gateways: 3,
      apis: 2,
      env: { GATEWAY_REPLICA_TTL_MS: '1500', GATEWAY_PING_INTERVAL_MS: '1000' },
    });
  });
  afterAll(async () => {
    for (const socket of sockets) socket.ws.terminate();
    await cluster?.stop();
  });

  it('a node that moves to another gateway between two calls gets the second call, once', async () => {
    const first = await node(0, 'mo', 'pc');
    for (const api of [0, 1]) expect(await callTool(api, 'mo', 'pc')).toEqual(answeredBy(0));
    const second = await node(1, 'mo', 'pc');
    expect((await first.socket.closed).code).toBe(4009);
    for (const api of [0, 1]) expect(await callTool(api, 'mo', 'pc')).toEqual(answeredBy(1));
    const third = await node(2, 'mo', 'pc');
    expect((await second.socket.closed).code).toBe(4009);
    for (const api of [1, 0]) expect(await callTool(api, 'mo', 'pc')).toEqual(answeredBy(2));
    expect([first.calls.length, second.calls.length, third.calls.length]).toEqual([2, 2, 2]);
  });

  it('a node that disconnects between two calls fails the second as before', async () => {
    const gone = await node(2, 'dee', 'pc');
    for (const api of [0, 1]) expect(await callTool(api, 'dee', 'pc')).toEqual(answeredBy(2));
    await gone.socket.close();
    for (const api of [0, 1]) {
      const { status, body } = await callTool(api, 'dee', 'pc');
      expect([404, 502]).toContain(status);
      expect(['node_not_found', 'node_disconnected']).toContain(
        (body as { error: { code: string } }).error.code,
      );
    }
    expect(gone.calls).toHaveLength(2);
  });

  it('a node whose gateway is killed with SIGKILL is reached on the gateway it reconnects to', async () => {
    const doomed = await node(2, 'kay', 'pc');
    for (const api of [0, 1]) expect(await callTool(api, 'kay', 'pc')).toEqual(answeredBy(2));
    await cluster.gateways[2]!.stop('SIGKILL');
    await doomed.socket.closed;
    const { status } = await callTool(0, 'kay', 'pc');
    expect([404, 502]).toContain(status);
    const moved = await node(0, 'kay', 'pc');
    for (const api of [0, 1]) expect(await callTool(api, 'kay', 'pc')).toEqual(answeredBy(0));
    expect([doomed.calls.length, moved.calls.length]).toEqual([2, 2]);
  });

  it('a gateway answers not-here only to a caller that asks for it (rolling upgrade)', async () => {
    const bus = createRedisBus({ url: testRedisUrl(), prefix: cluster.prefix });
    try {
      const command = {
        kind: 'tool_call',
        userId: 'nobody',
        nodeId: 'pc',
        request: {
          jsonrpc: '2.0',
          id: 'r1',
          method: 'tools/call',
          params: { name: 'x', arguments: {} },
        },
        timeoutMs: 1_000,
      };
      // A caller from before the route cache: node_not_found, as before.
      const old = await bus
        .request(gatewayChannel('gateway-1'), command, { timeoutMs: 5_000 })
        .catch((error: unknown) => error);
      expect(old).toBeInstanceOf(BusRemoteError);
      expect((old as BusRemoteError).code).toBe('node_not_found');
      expect(
        await bus.request(
          gatewayChannel('gateway-1'),
          { ...command, notHereOk: true },
          { timeoutMs: 5_000 },
        ),
      ).toEqual({ notHere: true });
    } finally {
      await bus.close();
    }
  });
  it('a heartbeat that changes only current_tasks is not announced to route caches; a status change is', async () => {
    const bus = createRedisBus({ url: testRedisUrl(), prefix: cluster.prefix });
    const heard: unknown[] = [];
    const subscription = await bus.subscribe(PRESENCE_CHANGES_CHANNEL, (change) => {
      if ((change as { userId?: string }).userId === 'tasks') heard.push(change);
    });
    try {
      const { socket } = await node(0, 'tasks', 'pc');
      for (const current_tasks of [1, 2, 0]) {
        socket.send({ type: 'heartbeat', status: 'online', current_tasks });
        await socket.next(ofType('heartbeat_ack'));
      }
      socket.send({ type: 'heartbeat', status: 'busy', current_tasks: 3 });
      await socket.next(ofType('heartbeat_ack'));
      // The gateway publishes in order on one connection: once another node's connection is
      // heard, every announcement of the heartbeats before it has been heard too.
      await node(0, 'tasks', 'marker');
      await expect
        .poll(() => heard.some((c) => (c as { nodeId: string }).nodeId === 'marker'))
        .toBe(true);
      const change = (nodeId: string) => ({ kind: 'node', userId: 'tasks', nodeId });
      // Connected, then busy; the tasks changes alone were not announced.
      expect(heard).toEqual([change('pc'), change('pc'), change('marker')]);
    } finally {
      await subscription.unsubscribe();
      await bus.close();
    }
  });
});
