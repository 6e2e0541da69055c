/**
 * A TCP proxy in front of Redis that counts what one service process sends it: commands (RESP
 * arrays) and round trips (bursts: client data sent after the server answered since the
 * client's last send, so commands sent together before any answer are one round trip).
 */
import { createServer, connect, type Socket } from 'node:net';

export interface RedisCounter {
  readonly url: string;
  /** Commands and round trips so far, over all connections through the proxy. */
  counts(): { commands: number; roundTrips: number };
  close(): Promise<void>;
}

/** A client command starts with an array header `*<n>\r\n$` (at the start of a chunk or after a CRLF). */
const COMMAND = /(?:^|\r\n)\*\d+\r\n\$/g;

export async function startRedisCounter(target: URL): Promise<RedisCounter> {
  let commands = 0;
  let roundTrips = 0;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(target.port || 6379), target.hostname);
    sockets.add(client).add(upstream);
    let answered = true;
    client.on('data', (chunk: Buffer) => {
      commands += chunk.toString('latin1').match(COMMAND)?.length ?? 0;
      if (answered) roundTrips++;
      answered = false;
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      answered = true;
      client.write(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    counts: () => ({ commands, roundTrips }),
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
