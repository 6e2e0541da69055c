/**
 * A TCP proxy in front of Redis that counts what one service process sends it: commands (RESP
 * arrays) and round trips (bursts: client data sent after the server answered since the
 * client's last send, so commands sent together before any answer are one round trip).
 */
import { startTcpProxy } from '../../packages/testing/src/index.js';
import { proxiedUrl } from './proxied-url.js';

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
  const proxy = await startTcpProxy(
    { host: target.hostname, port: Number(target.port || 6379) },
    {
      observe: () => {
        let answered = true;
        return {
          up(chunk) {
            commands += chunk.toString('latin1').match(COMMAND)?.length ?? 0;
            if (answered) roundTrips++;
            answered = false;
          },
          down() {
            answered = true;
          },
        };
      },
    },
  );
  return {
    url: proxiedUrl(target, proxy.port),
    counts: () => ({ commands, roundTrips }),
    close: () => proxy.close(),
  };
}
