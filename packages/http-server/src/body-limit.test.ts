import { once } from 'node:events';
import { connect } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { parseInput, REJECTED_BODY_DRAIN } from './index.js';
import { useTestServer } from './testing/test-server.js';

const serve = useTestServer({ bodyLimit: 1024 });

const Body = z.object({ name: z.string().min(1), count: z.number().int().default(1) });

describe('a body over the limit', () => {
  /** A raw HTTP/1.1 connection, to write a body at our pace and see what the server does. */
  async function connection(url: string) {
    const { port } = new URL(url);
    const socket = connect(Number(port), '127.0.0.1');
    await once(socket, 'connect');
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (text: string) => (received += text));
    const failed = new Promise<string>((resolve) => {
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
      socket.once('close', () => resolve('closed'));
    });
    const write = async (data: string | Uint8Array) => {
      if (!socket.write(data)) await Promise.race([once(socket, 'drain'), failed]);
    };
    const until = (pattern: RegExp) =>
      vi.waitFor(() => expect(received).toMatch(pattern), { timeout: 10_000 });
    return { socket, write, until, received: () => received, failed };
  }
  const head = (length: number) =>
    `POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${length}\r\n\r\n`;

  it('is answered 413 at once, and the client may finish sending it on a live connection', async () => {
    const { url } = await serve((a) => {
      a.post('/echo', async (request) => parseInput(Body, request.body));
    });
    const conn = await connection(url);
    const piece = new Uint8Array(64 * 1024).fill(0x78);
    const pieces = 128; // 8 MiB
    await conn.write(head(piece.length * pieces));
    await conn.write(piece);
    // The answer comes while most of the body is still to be sent.
    await conn.until(/^HTTP\/1\.1 413 [\s\S]*"payload_too_large"/);
    expect(conn.received()).not.toMatch(/connection: close/i);
    // fetch and most libraries go on writing: the server must not reset the connection.
    for (let i = 1; i < pieces; i++) await conn.write(piece);
    await conn.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await conn.until(/HTTP\/1\.1 200 /);
    conn.socket.destroy();
  });

  it('has its connection cut once the client sent far more than could be meant', async () => {
    const { url } = await serve((a) => {
      a.post('/echo', async (request) => parseInput(Body, request.body));
    });
    const conn = await connection(url);
    const piece = new Uint8Array(1024 * 1024).fill(0x78);
    await conn.write(head(1024 * piece.length)); // announces 1 GiB
    let sent = 0;
    let outcome: string | undefined;
    void conn.failed.then((why) => (outcome = why));
    while (outcome === undefined && sent < 1024) {
      await conn.write(piece);
      sent += 1;
    }
    await conn.failed;
    expect(conn.received()).toMatch(/^HTTP\/1\.1 413 /);
    expect(sent * piece.length).toBeGreaterThan(REJECTED_BODY_DRAIN.bytes);
    expect(sent).toBeLessThan(1024);
  });
});
