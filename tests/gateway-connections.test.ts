import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { startTcpProxy, testRedisUrl, type TcpProxy } from '@agent-backend/testing';
import { startCluster, type Cluster } from './cluster.js';
import { eventually, ofType, openSocket, type TestSocket } from './ws-client.js';

const ORIGIN = 'https://app.example';

/** One gateway and one API replica: connection rules, messages, bad input (spec 4.3, 6.2, 7). */
describe('gateway connections', () => {
  let cluster: Cluster;
  const open: TestSocket[] = [];
  const connect = async (
    path: string,
    query: Record<string, string | undefined>,
    headers: Record<string, string> = {},
  ) => {
    const socket = await openSocket(cluster.wsUrl(0, path, query), headers);
    open.push(socket);
    return socket;
  };
  const devices = async (userId: string, query = '') => {
    const res = await fetch(`${cluster.apis[0]!.url}/node/devices?user_id=${userId}${query}`, {
      headers: { authorization: `Bearer ${await cluster.token(userId)}` },
    });
    return (await res.json()) as { nodes: Array<Record<string, unknown>>; total: number };
  };

  beforeAll(async () => {
    cluster = await startCluster({
      gateways: 1,
      apis: 1,
      env: {
        GATEWAY_WEB_ORIGINS: ORIGIN,
        GATEWAY_MAX_FRAME_BYTES: String(64 * 1024),
        GATEWAY_MAX_BUFFERED_BYTES: String(64 * 1024),
        GATEWAY_PING_INTERVAL_MS: '400',
      },
    });
  });
  afterAll(async () => {
    for (const socket of open) socket.ws.terminate();
    await cluster?.stop();
  });

  it('registers an extension with the default node id and answers heartbeat, ping and status', async () => {
    const token = await cluster.token('alice');
    const ext = await connect('/ws/extension', { client_id: 'user_alice', token });
    ext.send({
      type: 'register',
      node_id: 'ext_alice',
      node_type: 'extension',
      available_tools: ['open_tab'],
    });
    expect(await ext.next(ofType('registered'))).toEqual({
      type: 'registered',
      node_id: 'ext_alice',
      success: true,
    });

    const listed = await devices('alice');
    expect(listed).toEqual({
      total: 1,
      nodes: [
        {
          node_id: 'ext_alice',
          node_type: 'extension',
          node_name: 'Unknown Node',
          status: 'online',
          os: '',
          os_version: '',
          app_version: '',
          capabilities: [],
          available_tools: ['open_tab'],
          current_tasks: 0,
          max_concurrent_tasks: 3,
          is_connected: true,
        },
      ],
    });

    ext.send({ type: 'heartbeat', status: 'busy', current_tasks: 2 });
    expect(await ext.next(ofType('heartbeat_ack'))).toEqual({ type: 'heartbeat_ack' });
    expect((await devices('alice')).nodes[0]).toMatchObject({ status: 'busy', current_tasks: 2 });
    expect(await devices('alice', '&online_only=true')).toEqual({ nodes: [], total: 0 });

    ext.send({ type: 'heartbeat' });
    await ext.next(ofType('heartbeat_ack'));
    expect((await devices('alice')).nodes[0]).toMatchObject({ status: 'online', current_tasks: 0 });

    ext.send({ type: 'status', status: 'offline' });
    ext.send({ type: 'ping' });
    expect(await ext.next(ofType('pong'))).toEqual({ type: 'pong' });
    expect((await devices('alice')).nodes[0]).toMatchObject({ status: 'offline' });
    await ext.close();
    // A clean disconnect removes the node at once (one Redis round trip after the close).
    await eventually(async () => (await devices('alice')).total === 0, 2_000, 20);
  });

  it('keeps several nodes and web connections per user, keyed by node id', async () => {
    const token = await cluster.token('carl');
    const d1 = await connect('/ws/desktop', { client_id: 'desktop_carl', node_id: 'pc-1', token });
    const d2 = await connect(
      '/ws/desktop',
      { client_id: 'desktop_carl', token: undefined },
      { authorization: `Bearer ${token}` },
    );
    const e1 = await connect('/ws/extension', { client_id: 'user_carl', node_id: 'chrome', token });
    for (const node of [d1, d2, e1]) node.send({ type: 'ping' });
    await Promise.all([d1, d2, e1].map((n) => n.next(ofType('pong'))));
    const ids = (await devices('carl')).nodes.map((n) => n.node_id).sort();
    expect(ids).toEqual(['chrome', 'desktop_carl', 'pc-1']);
    expect((await devices('carl', '&node_type=desktop')).total).toBe(2);
    const w1 = await connect('/ws/web', { user_id: 'carl', token }, { origin: ORIGIN });
    const w2 = await connect('/ws/web', { user_id: 'carl', token }, { origin: ORIGIN });
    w1.send({ type: 'ping' });
    w2.send({ type: 'ping' });
    await Promise.all([w1.next(ofType('pong')), w2.next(ofType('pong'))]);
  });

  it('closes with the documented codes when identity or credentials are wrong', async () => {
    const alice = await cluster.token('alice');
    const expired = await cluster.token('alice', Date.now() - 2 * 3600_000);
    const cases: Array<
      [string, Record<string, string | undefined>, Record<string, string>, number]
    > = [
      ['/ws/extension', { token: alice }, {}, 4001],
      ['/ws/desktop', { node_id: 'x', token: alice }, {}, 4001],
      ['/ws/web', { token: alice }, { origin: ORIGIN }, 4001],
      ['/ws/desktop', { client_id: 'user_alice', token: alice }, {}, 4002],
      ['/ws/extension', { client_id: 'user_' }, {}, 4002],
      ['/ws/extension', { client_id: 'user_alice' }, {}, 4401],
      ['/ws/extension', { client_id: 'user_alice', token: expired }, {}, 4401],
      ['/ws/extension', { client_id: 'user_alice', token: 'garbage' }, {}, 4401],
      ['/ws/extension', { client_id: 'user_bob', token: alice }, {}, 4403],
      ['/ws/web', { user_id: 'bob', token: alice }, { origin: ORIGIN }, 4403],
      ['/ws/web', { user_id: 'alice', token: alice }, { origin: 'https://evil.example' }, 4403],
      ['/ws/web', { user_id: 'alice', token: alice }, {}, 4403],
    ];
    for (const [path, query, headers, code] of cases) {
      const socket = await connect(path, query, headers);
      expect(
        (await socket.closed).code,
        `${path} ${JSON.stringify(query)} ${JSON.stringify(headers)}`,
      ).toBe(code);
    }
    // Nothing was registered by the refused connections.
    expect(await devices('alice')).toEqual({ nodes: [], total: 0 });
    await expect(openSocket(cluster.wsUrl(0, '/ws/other', {}))).rejects.toThrow(/HTTP 404/);
  });

  it('survives frames over the size bound sent to a connection it is refusing', async () => {
    // A client that ignores the close and sends at once: the refused socket still reads, and an
    // oversized frame there is an error on a socket the gateway no longer serves (found by the
    // fuzz test: it crashed the process).
    for (let round = 0; round < 3; round += 1) {
      const refused = await connect('/ws/extension', { client_id: 'user_alice', token: 'garbage' });
      refused.sendRaw(Buffer.alloc(128 * 1024, 0x61));
      expect([4401, 1006, 1009]).toContain((await refused.closed).code);
    }
    const extension = await connect('/ws/extension', {
      client_id: 'user_carol',
      token: await cluster.token('carol'),
    });
    extension.send({ type: 'ping' });
    await extension.next(ofType('pong'));
  });

  it('answers bad frames with an error message and keeps the connection open', async () => {
    const token = await cluster.token('dora');
    const node = await connect('/ws/desktop', { client_id: 'desktop_dora', token });
    const neighbour = await connect('/ws/desktop', {
      client_id: 'desktop_dora',
      node_id: 'other',
      token,
    });

    node.sendRaw('{not json');
    expect(await node.next(ofType('error'))).toEqual({
      type: 'error',
      code: 'invalid_json',
      message: 'frame is not valid JSON',
    });
    node.sendRaw('[1,2]');
    expect(await node.next(ofType('error'))).toMatchObject({ code: 'invalid_message' });
    node.send({ type: 'teleport' });
    expect(await node.next(ofType('error'))).toEqual({
      type: 'error',
      code: 'unknown_type',
      message: 'unknown message type "teleport"',
    });
    node.send({ type: 'register', node_id: 'n' });
    const invalid = await node.next(ofType('error'));
    expect(invalid).toMatchObject({ code: 'invalid_message' });
    expect(invalid.message).toContain('node_type');
    node.send({ type: 'register', node_id: 'n', node_type: 'extension' });
    expect(await node.next(ofType('registered'))).toEqual({
      type: 'registered',
      node_id: 'n',
      success: false,
    });
    node.send({ jsonrpc: '2.0', id: 'nobody-asked', result: { content: [] } });
    expect(await node.next(ofType('error'))).toMatchObject({ code: 'invalid_message' });
    node.send({ type: 'ping' });
    expect(await node.next(ofType('pong'))).toEqual({ type: 'pong' });

    // A frame over the limit closes that connection with 1009 and nothing else.
    node.sendRaw('x'.repeat(65 * 1024));
    expect((await node.closed).code).toBe(1009);
    neighbour.send({ type: 'ping' });
    expect(await neighbour.next(ofType('pong'))).toEqual({ type: 'pong' });
  });

  it('closes the older connection when the same node connects again (4009)', async () => {
    const token = await cluster.token('erik');
    const first = await connect('/ws/desktop', { client_id: 'desktop_erik', token });
    first.send({ type: 'ping' });
    await first.next(ofType('pong'));
    const second = await connect('/ws/desktop', { client_id: 'desktop_erik', token });
    expect((await first.closed).code).toBe(4009);
    second.send({ type: 'ping' });
    await second.next(ofType('pong'));
    expect((await devices('erik')).nodes.map((n) => n.node_id)).toEqual(['desktop_erik']);
  });

  it('terminates a node that stops answering pings and removes it from presence', async () => {
    const token = await cluster.token('finn');
    const node = await connect('/ws/desktop', { client_id: 'desktop_finn', token });
    node.send({ type: 'ping' });
    await node.next(ofType('pong'));
    expect((await devices('finn')).total).toBe(1);
    // The client process is alive but its socket no longer reads: no pongs come back.
    (node.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    await eventually(async () => (await devices('finn')).total === 0, 10_000);
  });
});

/** Its own gateway: server pings off, so a paused client is closed for its buffer, not its silence. */
describe('gateway slow consumers', () => {
  let cluster: Cluster;
  const open: TestSocket[] = [];
  const connect = async (
    path: string,
    query: Record<string, string | undefined>,
    headers: Record<string, string> = {},
  ) => {
    const socket = await openSocket(cluster.wsUrl(0, path, query), headers);
    open.push(socket);
    return socket;
  };
  beforeAll(async () => {
    cluster = await startCluster({
      gateways: 1,
      apis: 0,
      env: {
        GATEWAY_WEB_ORIGINS: ORIGIN,
        GATEWAY_MAX_BUFFERED_BYTES: String(64 * 1024),
        GATEWAY_PING_INTERVAL_MS: '600000',
      },
    });
  });
  afterAll(async () => {
    for (const socket of open) socket.ws.terminate();
    await cluster?.stop();
  });

  it('closes a consumer too slow to drain its buffer without affecting the others', async () => {
    const token = await cluster.token('gina');
    const ext = await connect('/ws/extension', { client_id: 'user_gina', token });
    const slow = await connect('/ws/web', { user_id: 'gina', token }, { origin: ORIGIN });
    const fast = await connect('/ws/web', { user_id: 'gina', token }, { origin: ORIGIN });
    for (const s of [ext, slow, fast]) s.send({ type: 'ping' });
    await Promise.all([ext, slow, fast].map((s) => s.next(ofType('pong'))));
    (slow.ws as unknown as { _socket: { pause(): void } })._socket.pause();

    // Each workflows_list from the extension goes to every web connection of the user.
    const workflows = Array.from({ length: 40 }, (_, i) => ({
      id: `wf-${i}`,
      blob: 'y'.repeat(1_000),
    }));
    const log = cluster.gateways[0]!.stdout;
    for (
      let round = 0;
      round < 400 && !log.some((l) => l.includes('closing slow consumer'));
      round++
    ) {
      ext.send({ type: 'workflows_list', success: true, workflows });
      await fast.next((f) => f.type === 'workflows_list');
    }
    expect(log.some((l) => l.includes('closing slow consumer'))).toBe(true);
    ext.send({ type: 'workflows_list', success: true, workflows: [] });
    expect(
      await fast.next(
        (f) =>
          f.type === 'workflows_list' && Array.isArray(f.workflows) && f.workflows.length === 0,
      ),
    ).toBeTruthy();
  });
});

describe('gateway legacy switch', () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await startCluster({
      gateways: 1,
      apis: 1,
      env: { GATEWAY_ALLOW_UNAUTHENTICATED: 'true' },
    });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('admits clients without a token only when switched on, and still checks tokens that are sent', async () => {
    const legacy = await openSocket(cluster.wsUrl(0, '/ws/desktop', { client_id: 'desktop_old' }));
    legacy.send({ type: 'ping' });
    expect(await legacy.next(ofType('pong'))).toEqual({ type: 'pong' });
    const wrong = await openSocket(
      cluster.wsUrl(0, '/ws/desktop', {
        client_id: 'desktop_old',
        token: await cluster.token('mallory'),
      }),
    );
    expect((await wrong.closed).code).toBe(4403);
    legacy.ws.terminate();
  });
});

/**
 * Its own gateway with a short presence TTL and fast pings: a node that sends no heartbeat stays
 * listed on its pongs alone, and its pongs refresh presence only every third of the TTL (one
 * Redis write per pong made heartbeats queue behind each ping pass: docs/BENCHMARKS.md).
 */
describe('gateway presence refreshed by pongs', () => {
  const TTL_MS = 1_800;
  const PING_MS = 200;
  let cluster: Cluster;
  let socket: TestSocket | undefined;
  beforeAll(async () => {
    cluster = await startCluster({
      gateways: 1,
      apis: 1,
      env: { GATEWAY_PING_INTERVAL_MS: String(PING_MS), NODE_SILENT_TIMEOUT_MS: String(TTL_MS) },
    });
  });
  afterAll(async () => {
    socket?.ws.terminate();
    await cluster?.stop();
  });

  it('keeps a node that only answers pings listed, writing presence a third of the TTL apart', async () => {
    const token = await cluster.token('quiet');
    socket = await openSocket(
      cluster.wsUrl(0, '/ws/desktop', { client_id: 'desktop_quiet', token }),
    );
    socket.send({ type: 'register', node_id: 'desktop_quiet', node_type: 'desktop' });
    await socket.next(ofType('registered'));
    const redis = new Redis(testRedisUrl());
    try {
      // [expiresAt, lastSeenAt, connectedAt, replicaId, data]: lastSeenAt moves on each write.
      const seen = new Set<number>();
      const started = Date.now();
      while (Date.now() - started < 2.5 * TTL_MS) {
        const raw = await redis.hget(`${cluster.prefix}presence:user:quiet`, 'desktop_quiet');
        if (raw) seen.add((JSON.parse(raw) as number[])[1]!);
        await new Promise((r) => setTimeout(r, 25));
      }
      const writes = [...seen].sort((a, b) => a - b);
      const gaps = writes.slice(1).map((t, i) => t - writes[i]!);
      // Pongs every 200 ms; writes at least TTL / 3 (600 ms) apart, yet often enough to live.
      expect(writes.length).toBeGreaterThanOrEqual(3);
      expect(Math.min(...gaps)).toBeGreaterThanOrEqual(TTL_MS / 3 - 50);
    } finally {
      redis.disconnect();
    }
    const res = await fetch(`${cluster.apis[0]!.url}/node/devices?user_id=quiet`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(((await res.json()) as { total: number }).total).toBe(1);
  });
});

/**
 * Its own gateway, talking to Redis through a proxy the test can stall: a heartbeat or `ping`
 * that changes nothing is answered without waiting on Redis (its presence write only extends the
 * entry's TTL), and a failed presence write is logged and its change written again by the next
 * heartbeat.
 */
describe('gateway heartbeats and presence writes', () => {
  let cluster: Cluster;
  let proxy: TcpProxy;
  const sockets: TestSocket[] = [];
  const redis = new Redis(testRedisUrl());
  beforeAll(async () => {
    const target = new URL(testRedisUrl());
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
    target.hostname = '127.0.0.1';
    target.port = String(proxy.port);
    cluster = await startCluster({ gateways: 0, apis: 1 });
    // The command deadline far beyond the test's waits: a write stalled by the proxy never fails.
    await cluster.startReplica('gateway', 'gateway-1', {
      REDIS_URL: target.toString(),
      REDIS_COMMAND_TIMEOUT_MS: '600000',
      GATEWAY_PING_INTERVAL_MS: '600000',
    });
  });
  afterAll(async () => {
    for (const socket of sockets) socket.ws.terminate();
    proxy?.setMode('forward');
    await cluster?.stop();
    await proxy?.close();
    redis.disconnect();
  });
  const connectNode = async (userId: string) => {
    const token = await cluster.token(userId);
    const socket = await openSocket(
      cluster.wsUrl(0, '/ws/desktop', { client_id: `desktop_${userId}`, token }),
    );
    sockets.push(socket);
    socket.send({ type: 'register', node_id: `desktop_${userId}`, node_type: 'desktop' });
    await socket.next(ofType('registered'));
    return { socket, token };
  };
  const listed = async (userId: string, token: string) => {
    const res = await fetch(`${cluster.apis[0]!.url}/node/devices?user_id=${userId}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    return ((await res.json()) as { nodes: Array<Record<string, unknown>> }).nodes;
  };

  it('answers a heartbeat and a ping that change nothing while Redis is stalled', async () => {
    const { socket, token } = await connectNode('stalled');
    proxy.setMode('stall');
    try {
      socket.send({ type: 'heartbeat', status: 'online', current_tasks: 0 });
      expect(await socket.next(ofType('heartbeat_ack'))).toEqual({ type: 'heartbeat_ack' });
      socket.send({ type: 'ping' });
      expect(await socket.next(ofType('pong'))).toEqual({ type: 'pong' });
      // A change is acknowledged once presence holds it, so it waits for Redis.
      socket.send({ type: 'heartbeat', status: 'busy', current_tasks: 1 });
    } finally {
      proxy.setMode('forward');
    }
    await socket.next(ofType('heartbeat_ack'));
    expect(await listed('stalled', token)).toMatchObject([{ status: 'busy', current_tasks: 1 }]);
  });

  it('logs a failed presence write and writes the lost change with the next heartbeat', async () => {
    const { socket, token } = await connectNode('failing');
    const key = `${cluster.prefix}presence:user:failing`;
    const log = cluster.gateways[0]!.stdout;
    // The user's hash set aside and a string in its place: every write of the node fails.
    await redis.rename(key, `${key}:aside`);
    await redis.set(key, 'not a hash');
    socket.send({ type: 'heartbeat', status: 'busy', current_tasks: 2 });
    await socket.next(ofType('heartbeat_ack'));
    await eventually(
      async () => log.some((line) => line.includes('presence write failed')),
      5_000,
      20,
    );
    await redis.del(key);
    await redis.rename(`${key}:aside`, key);
    expect(await listed('failing', token)).toMatchObject([{ status: 'online', current_tasks: 0 }]);

    // The same state again: not a change for the connection, but presence never got it.
    socket.send({ type: 'heartbeat', status: 'busy', current_tasks: 2 });
    await socket.next(ofType('heartbeat_ack'));
    expect(await listed('failing', token)).toMatchObject([{ status: 'busy', current_tasks: 2 }]);
  });
});
