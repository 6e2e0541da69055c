/**
 * Shutdown drain: a gateway replica that gets SIGTERM tells its nodes 1001 and takes no new
 * connection; a node behind a load balancer reconnects to the other replica, registers there,
 * and its tools are callable again.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeClient } from '@agent-backend/node-client';
import WebSocket from 'ws';
import { startCluster, type Cluster } from './cluster.js';
import { json, post } from './helpers.js';

/**
 * A TCP load balancer: each connection goes to the first target that accepts it, as one whose
 * health check fails would be skipped (a replica that stopped listening refuses connections).
 */
async function startFailoverBalancer(ports: number[]): Promise<{ port: number; close(): void }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.on('error', () => client.destroy());
    const attempt = (i: number): void => {
      if (i >= ports.length) {
        client.destroy();
        return;
      }
      const upstream = connect({ host: '127.0.0.1', port: ports[i]! });
      let connected = false;
      upstream.on('error', () => (connected ? client.destroy() : attempt(i + 1)));
      upstream.once('connect', () => {
        connected = true;
        sockets.add(upstream);
        client.pipe(upstream).pipe(client);
        upstream.on('close', () => client.destroy());
        client.on('close', () => upstream.destroy());
      });
    };
    attempt(0);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

describe('gateway shutdown drain', () => {
  let cluster: Cluster;
  let balancer: { port: number; close(): void };
  let node: NodeClient | undefined;

  beforeAll(async () => {
    cluster = await startCluster({ gateways: 2, apis: 1 });
    balancer = await startFailoverBalancer(
      cluster.gateways.map((g) => Number(new URL(g.url).port)),
    );
  });
  afterAll(async () => {
    await node?.close().catch(() => undefined);
    balancer?.close();
    await cluster?.stop();
  });

  it('SIGTERM: the node gets 1001, re-registers on the other replica, and the closing one refuses upgrades', async () => {
    const token = await cluster.token('gus');
    const callTool = async () =>
      json(
        await post(
          `${cluster.apis[0]!.url}/node/tools/call`,
          { node_type: 'desktop', tool_name: 'where', arguments: {} },
          { authorization: `Bearer ${token}` },
        ),
      );
    const registrations: string[] = [];
    const closes: number[] = [];
    node = new NodeClient({
      url: `ws://127.0.0.1:${balancer.port}`,
      kind: 'desktop',
      userId: 'gus',
      token,
      reconnect: { initialDelayMs: 50, maxDelayMs: 200, jitter: 0 },
      tools: { where: { writes: false, handler: () => 'here' } },
    });
    node.on('registered', (m) => registrations.push(String(m.success)));
    node.on('disconnected', (info) => closes.push(info.code));
    await node.start();
    expect(await callTool()).toMatchObject({ status: 200, body: { success: true, text: 'here' } });

    const reRegistered = new Promise<void>((resolve) =>
      node!.on('registered', () => registrations.length === 2 && resolve()),
    );
    const exit = cluster.gateways[0]!.stop('SIGTERM');
    const closed = new Promise<number>((resolve) =>
      node!.once('disconnected', (i) => resolve(i.code)),
    );
    expect(await closed).toBe(1001);

    // The closing replica takes no new connection: refused, or 503 at the upgrade.
    const refused = await new Promise<string>((resolve) => {
      const ws = new WebSocket(
        cluster.wsUrl(0, '/ws/desktop', { client_id: 'desktop_gus', node_id: 'probe', token }),
      );
      ws.on('open', () => resolve('open'));
      ws.on('unexpected-response', (_req, res) => resolve(`http ${res.statusCode}`));
      ws.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    });
    expect(refused).toMatch(/^(ECONNREFUSED|ECONNRESET|http 503)$/);

    await reRegistered;
    expect(registrations).toEqual(['true', 'true']);
    expect(closes).toEqual([1001]);
    // The node answers again, through the other replica.
    expect(await callTool()).toMatchObject({ status: 200, body: { success: true, text: 'here' } });
    expect(await exit).toBe(0);
  });
});
