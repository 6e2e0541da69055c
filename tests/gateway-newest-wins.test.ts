import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisBus } from '@agent-backend/bus';
import { NodeClient } from '@agent-backend/node-client';
import { gatewayChannel } from '@agent-backend/node-rpc';
import { createRedisPresence } from '@agent-backend/presence';
import { testRedisUrl } from '@agent-backend/testing';
import { startCluster, type Cluster } from './cluster.js';
import { ofType, openSocket, type TestSocket } from './ws-client.js';

/**
 * "The newer connection of a node wins" by the client's own order (`instance_id`,
 * `connection_seq`), not by the order in which gateways process registrations: a socket the
 * client gave up on, processed late, is refused with 4011 and leaves the later one connected
 * and listed, on one gateway and across two sharing Redis. Two instances replace as before.
 */
describe('gateway: the newer connection of a client instance wins', () => {
  let cluster: Cluster;
  const sockets: TestSocket[] = [];
  const node = async (
    gateway: number,
    user: string,
    order?: { instance: string; seq: number },
  ): Promise<TestSocket> => {
    const socket = await openSocket(
      cluster.wsUrl(gateway, '/ws/desktop', {
        client_id: `desktop_${user}`,
        node_id: 'pc',
        token: await cluster.token(user),
        instance_id: order?.instance,
        connection_seq: order === undefined ? undefined : String(order.seq),
      }),
    );
    sockets.push(socket);
    socket.send({ type: 'register', node_id: 'pc', node_type: 'desktop', available_tools: [] });
    return socket;
  };
  /** The node answers a ping on this socket, so it is still open and listed by the gateway. */
  const alive = async (socket: TestSocket) => {
    socket.send({ type: 'ping' });
    await socket.next(ofType('pong'));
  };
  const devices = async (user: string) => {
    const res = await fetch(`${cluster.apis[0]!.url}/node/devices?user_id=${user}`, {
      headers: { authorization: `Bearer ${await cluster.token(user)}` },
    });
    const body = (await res.json()) as { nodes: Array<{ node_id: string }> };
    return body.nodes.map((n) => n.node_id);
  };
  const stillOpen = async (socket: TestSocket) => {
    const outcome = await Promise.race([
      socket.closed,
      new Promise((resolve) => setTimeout(() => resolve('open'), 300)),
    ]);
    expect(outcome).toBe('open');
  };

  beforeAll(async () => {
    cluster = await startCluster({ gateways: 2, apis: 1 });
  });
  afterAll(async () => {
    for (const socket of sockets) socket.ws.terminate();
    await cluster?.stop();
  });

  for (const [where, late] of [
    ['on the same gateway', 0],
    ['on another gateway sharing Redis', 1],
  ] as const) {
    it(`refuses attempt 1 registered after attempt 2 of the same instance ${where}`, async () => {
      const user = `stale${late}`;
      const second = await node(0, user, { instance: 'dev-a', seq: 2 });
      await second.next(ofType('registered'));
      const first = await node(late, user, { instance: 'dev-a', seq: 1 });
      expect(await first.closed).toMatchObject({ code: 4011 });
      await stillOpen(second);
      await alive(second);
      expect(await devices(user)).toEqual(['pc']);
      // In the client's order, attempt 3 still replaces attempt 2.
      const third = await node(late, user, { instance: 'dev-a', seq: 3 });
      await third.next(ofType('registered'));
      expect(await second.closed).toMatchObject({ code: 4009 });
      await alive(third);
      expect(await devices(user)).toEqual(['pc']);
    });
  }

  it('closes a superseded connection still open (its replace lost) on its next heartbeat', async () => {
    const user = 'lost-replace';
    const first = await node(1, user, { instance: 'dev-a', seq: 1 });
    await first.next(ofType('registered'));
    // Attempt 2 registered on the other gateway, whose replace command never reached this one.
    const presence = createRedisPresence({ url: testRedisUrl(), prefix: cluster.prefix });
    try {
      const later = { instance: 'dev-a', seq: 2 };
      await presence.upsertNode({
        ...{ userId: user, nodeId: 'pc', nodeType: 'desktop', replicaId: 'gateway-1' },
        connection: later,
        data: { status: 'online' },
      });
      first.send({ type: 'heartbeat', status: 'busy', current_tasks: 1 });
      const outcome = await Promise.race([
        first.closed,
        new Promise((resolve) => setTimeout(() => resolve('still open'), 3_000)),
      ]);
      expect(outcome).toMatchObject({ code: 4011 });
      // The later connection's entry is untouched.
      expect(await presence.getNode(user, 'pc')).toMatchObject({
        replicaId: 'gateway-1',
        connection: later,
        data: { status: 'online' },
      });
    } finally {
      await presence.close();
    }
  });

  it('lets two instances (or clients naming no order) replace each other as before', async () => {
    const user = 'twins';
    const a = await node(0, user, { instance: 'dev-a', seq: 5 });
    await a.next(ofType('registered'));
    const b = await node(1, user, { instance: 'dev-b', seq: 1 });
    await b.next(ofType('registered'));
    expect(await a.closed).toMatchObject({ code: 4009 });
    const plain = await node(0, user);
    await plain.next(ofType('registered'));
    expect(await b.closed).toMatchObject({ code: 4009 });
    await alive(plain);
    expect(await devices(user)).toEqual(['pc']);
  });

  it('a replace command from an older connection of the instance leaves the later one open', async () => {
    const user = 'racer';
    const held = await node(1, user, { instance: 'dev-a', seq: 4 });
    await held.next(ofType('registered'));
    const bus = createRedisBus({ url: testRedisUrl(), prefix: cluster.prefix });
    try {
      const replace = { kind: 'replace', userId: user, nodeId: 'pc', byReplica: 'gateway-1' };
      const ask = (command: object) =>
        bus.request(gatewayChannel('gateway-2'), command, { timeoutMs: 5_000 });
      // Sent by a replica that registered attempt 3 late (it lost presence's compare meanwhile).
      expect(await ask({ ...replace, connection: { instance: 'dev-a', seq: 3 } })).toEqual({
        closed: false,
      });
      await stillOpen(held);
      await alive(held);
      // A later attempt, another instance, or a sender naming no order: closed as before.
      expect(await ask({ ...replace, connection: { instance: 'dev-b', seq: 1 } })).toEqual({
        closed: true,
      });
      expect(await held.closed).toMatchObject({ code: 4009 });
    } finally {
      await bus.close();
    }
  });

  it('keeps an SDK client connected when its first socket, given up on, reaches the gateway late', async () => {
    const proxy = await delayFirstConnection(new URL(cluster.gateways[0]!.url).port);
    const client = new NodeClient({
      url: `ws://127.0.0.1:${proxy.port}`,
      kind: 'desktop',
      userId: 'sdk',
      nodeId: 'pc',
      token: await cluster.token('sdk'),
      connectTimeoutMs: 300,
      reconnect: { initialDelayMs: 10, maxDelayMs: 50 },
    });
    const stopped: string[] = [];
    client.on('stopped', ({ error }) => stopped.push(error.code));
    client.on('error', () => undefined);
    try {
      await client.start();
      // Now the gateway gets the first attempt's upgrade, after the second one registered.
      const stale = await proxy.release();
      expect(stopped).toEqual([]);
      expect(stale).toMatch(/^HTTP\/1\.1 101/);
      expect(stale).toContain('stale');
      await client.ping();
      expect(client.isRegistered).toBe(true);
      expect(await devices('sdk')).toEqual(['pc']);
    } finally {
      await client.close();
      await proxy.close();
    }
  });
});

/**
 * A TCP proxy to the gateway that holds the bytes of its first connection until `release()`,
 * while its client gives up and connects again (forwarded at once). `release()` then replays
 * the first connection's upgrade to the gateway, as a starved gateway would process it late,
 * and resolves with what the gateway answered once it closes that connection.
 */
async function delayFirstConnection(port: string) {
  let first: { bytes: Buffer[] } | undefined;
  const open = new Set<Socket>();
  const server: Server = createServer((client) => {
    open.add(client);
    client.on('close', () => open.delete(client));
    client.on('error', () => undefined);
    if (!first) {
      const held = (first = { bytes: [] as Buffer[] });
      client.on('data', (chunk: Buffer) => held.bytes.push(chunk));
      return;
    }
    const upstream = connect(Number(port), '127.0.0.1');
    open.add(upstream);
    upstream.on('close', () => client.destroy());
    upstream.on('error', () => undefined);
    client.on('close', () => upstream.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    release(): Promise<string> {
      return new Promise((resolve, reject) => {
        const upstream = connect(Number(port), '127.0.0.1', () => {
          for (const chunk of first?.bytes ?? []) upstream.write(chunk);
        });
        open.add(upstream);
        let answer = '';
        upstream.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
        upstream.on('error', reject);
        upstream.on('close', () => resolve(answer));
        setTimeout(() => upstream.destroy(), 5_000);
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of open) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
