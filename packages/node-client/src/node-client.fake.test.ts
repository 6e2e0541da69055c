import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ClientError } from './errors.js';
import { NodeClient, type NodeClientOptions } from './node-client.js';
import { startFakeGateway, type FakeGateway } from './testing/fake-gateway.js';
import { expectHandlesBackTo, nextEvent, record, settledHandles, waitFor } from './testing/wait.js';

// Checks that need control over raw frames or the transport, which only the test double gives.

describe('node client, raw frames and transport failures', () => {
  let gateway: FakeGateway;
  const clients: NodeClient[] = [];
  const fast = { initialDelayMs: 50, maxDelayMs: 1_000, jitter: 0 };

  async function registered(options: Partial<NodeClientOptions> = {}) {
    const userId = `u${randomBytes(4).toString('hex')}`;
    const client = new NodeClient({
      url: gateway.url,
      kind: 'desktop',
      userId,
      token: await gateway.token(userId),
      reconnect: fast,
      tools: { echo: { handler: (args) => String(args.text) } },
      ...options,
    });
    clients.push(client);
    await client.start();
    return { client, userId, nodeId: client.nodeId };
  }

  beforeAll(async () => {
    gateway = await startFakeGateway();
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });
  afterAll(async () => {
    await gateway.close();
  });

  it('drops frames that are not JSON or match no schema, and stays connected', async () => {
    const { client, userId, nodeId } = await registered();
    const errors = record(client, 'error');
    gateway.sendRaw(userId, nodeId, 'not json');
    gateway.sendRaw(userId, nodeId, JSON.stringify({ type: 'registered' }));
    gateway.sendRaw(userId, nodeId, JSON.stringify({ type: 'teleport' }));
    await waitFor(() => errors.length === 3, 'three protocol errors');
    expect(errors.map((e) => e.code)).toEqual([
      'protocol_error',
      'protocol_error',
      'protocol_error',
    ]);
    expect(errors[1]?.details?.problems).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: 'node_id' })]),
    );
    await client.ping();
  });

  it('reports a server error message as server_error', async () => {
    const { client, userId, nodeId } = await registered();
    const error = nextEvent(client, 'error');
    gateway.sendRaw(
      userId,
      nodeId,
      JSON.stringify({ type: 'error', code: 'invalid_message', message: 'bad frame' }),
    );
    expect(await error).toMatchObject({
      code: 'server_error',
      details: { serverCode: 'invalid_message' },
    });
  });

  it('answers malformed JSON-RPC requests with standard error codes', async () => {
    const { userId, nodeId } = await registered();
    const ask = async (request: unknown) => {
      const answer = gateway.nextFrame(userId, nodeId);
      gateway.sendRaw(userId, nodeId, JSON.stringify(request));
      return answer;
    };
    expect(await ask({ jsonrpc: '1.0', id: 'a', method: 'tools/call', params: {} })).toEqual({
      jsonrpc: '2.0',
      id: 'a',
      error: { code: -32600, message: 'Invalid Request' },
    });
    expect(await ask({ jsonrpc: '2.0', method: 'tools/call', params: {} })).toMatchObject({
      id: null,
      error: { code: -32600 },
    });
    expect(await ask({ jsonrpc: '2.0', id: 'b', method: 'tools/list' })).toMatchObject({
      id: 'b',
      error: { code: -32601, message: 'Method not found: tools/list' },
    });
    expect(
      await ask({
        jsonrpc: '2.0',
        id: 'c',
        method: 'tools/call',
        params: { name: 'echo', arguments: [1] },
      }),
    ).toMatchObject({
      id: 'c',
      error: { code: -32602, message: expect.stringContaining('params.arguments') },
    });
  });

  it('does not answer twice for a duplicated request id', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { userId, nodeId } = await registered({
      tools: { wait: { handler: async () => (await gate, 'done') } },
    });
    const request = JSON.stringify({
      jsonrpc: '2.0',
      id: 'dup',
      method: 'tools/call',
      params: { name: 'wait', arguments: {} },
    });
    const first = gateway.nextFrame(userId, nodeId);
    gateway.sendRaw(userId, nodeId, request);
    gateway.sendRaw(userId, nodeId, request);
    expect(await first).toMatchObject({
      id: 'dup',
      error: { code: -32600, message: 'Duplicate request id: dup' },
    });
    const second = gateway.nextFrame(userId, nodeId);
    release();
    expect(await second).toMatchObject({
      id: 'dup',
      result: { content: [{ type: 'text', text: 'done' }] },
    });
  });

  it('retries an HTTP refusal of the upgrade and reports its status', async () => {
    const client = new NodeClient({
      url: `${gateway.url}/no-such-prefix`,
      kind: 'desktop',
      userId: 'x',
      token: 't',
      reconnect: fast,
    });
    clients.push(client);
    const downs = record(client, 'disconnected');
    client.start().catch(() => {});
    await waitFor(() => downs.length >= 2, 'two refused attempts');
    expect(downs[0]).toMatchObject({ httpStatus: 404, willReconnect: true, delayMs: 50 });
    expect(downs[1]).toMatchObject({ httpStatus: 404, willReconnect: true, delayMs: 100 });
    expect(gateway.upgrades).toContain('/no-such-prefix/ws/desktop');
  });

  it('stops on 4001 and 4009 sent by the server, and reconnects on 4008', async () => {
    const { client, userId } = await registered();
    const down = nextEvent(client, 'disconnected');
    gateway.closeUser(userId, 4008, 'slow consumer');
    expect(await down).toMatchObject({ code: 4008, reason: 'slow consumer', willReconnect: true });
    await nextEvent(client, 'registered');
    const stopped = nextEvent(client, 'stopped');
    gateway.closeUser(userId, 4001, 'missing client_id');
    expect((await stopped).error.code).toBe('missing_identity');
  });

  it('names each attempt in the URL (one instance id, a growing sequence), and reconnects on 4011', async () => {
    const { client, userId } = await registered();
    const urls = record(client, 'connecting');
    const down = nextEvent(client, 'disconnected');
    gateway.closeUser(userId, 4011, 'stale');
    expect(await down).toMatchObject({ code: 4011, willReconnect: true });
    await nextEvent(client, 'registered');
    const again = new URL(urls[0]!.url).searchParams;
    expect(again.get('connection_seq')).toBe('2');
    expect(again.get('instance_id')).toMatch(/^[0-9a-f-]{36}$/);
    const other = new NodeClient({ url: gateway.url, kind: 'desktop', userId: 'x' });
    const first = nextEvent(other, 'connecting');
    other.start().catch(() => {});
    const params = new URL((await first).url).searchParams;
    await other.close();
    expect(params.get('connection_seq')).toBe('1');
    expect(params.get('instance_id')).not.toBe(again.get('instance_id'));
  });

  it('keeps retrying while the server is down and stops cleanly when closed meanwhile', async () => {
    const before = await settledHandles();
    const server: Server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const client = new NodeClient({
      url: `ws://127.0.0.1:${port}`,
      kind: 'desktop',
      userId: 'x',
      token: 't',
      reconnect: { ...fast, maxDelayMs: 100 },
    });
    const downs = record(client, 'disconnected');
    const started = client.start();
    await waitFor(() => downs.length >= 3, 'three refused connections');
    expect(downs.map((d) => d.delayMs)).toEqual(expect.arrayContaining([50, 100, 100]));
    expect(downs[0]?.reason).toMatch(/ECONNREFUSED/);
    await client.close();
    await expect(started).rejects.toMatchObject({ code: 'closed' });
    await expectHandlesBackTo(before);
  });

  it('drops a connection on which the server fell silent', async () => {
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise((resolve) => wss.once('listening', resolve));
    const { port } = wss.address() as AddressInfo;
    const client = new NodeClient({
      url: `ws://127.0.0.1:${port}`,
      kind: 'desktop',
      userId: 'x',
      token: 't',
      heartbeatMs: 30,
      idleTimeoutMs: 100,
      reconnect: fast,
    });
    clients.push(client);
    client.start().catch(() => {});
    const down = await nextEvent(client, 'disconnected');
    expect(down.reason).toMatch(/no frame from the server for \d+ ms/);
    expect(down.willReconnect).toBe(true);
    await client.close();
    for (const socket of wss.clients) socket.terminate();
    await new Promise((resolve) => wss.close(resolve));
  });

  it('sends the token in the query when asked, and never puts it in events', async () => {
    const userId = `u${randomBytes(4).toString('hex')}`;
    const token = await gateway.token(userId);
    const client = new NodeClient({
      url: gateway.url,
      kind: 'desktop',
      userId,
      token,
      tokenTransport: 'query',
      reconnect: fast,
    });
    clients.push(client);
    const connecting = nextEvent(client, 'connecting');
    await client.start();
    const { url } = await connecting;
    expect(url).toContain('token=REDACTED');
    expect(url).not.toContain(token);
  });

  it('stops without reconnecting when reconnect is disabled', async () => {
    const { client, userId } = await registered({ reconnect: { enabled: false } });
    const stopped = nextEvent(client, 'stopped');
    await gateway.dropConnections(userId);
    const { error }: { error: ClientError } = await stopped;
    expect(error.code).toBe('disconnected');
  });
});
