import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { NodeClient } from './node-client.js';

describe('localAddress', () => {
  const closers: Array<() => unknown> = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  it('binds the socket to the given source address', async () => {
    const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    closers.push(() => {
      for (const ws of server.clients) ws.terminate();
      return new Promise((resolve) => server.close(resolve));
    });
    await new Promise((resolve) => server.once('listening', resolve));
    const from = new Promise<string | undefined>((resolve) =>
      server.once('connection', (_ws, req) => resolve(req.socket.remoteAddress)),
    );
    const { port } = server.address() as AddressInfo;
    const client = new NodeClient({
      url: `ws://127.0.0.1:${port}`,
      kind: 'desktop',
      userId: 'u1',
      localAddress: '127.0.0.2',
    });
    closers.push(() => client.close());
    void client.start();
    expect(await from).toBe('127.0.0.2');
  });
});
