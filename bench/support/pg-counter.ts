/**
 * A TCP proxy in front of PostgreSQL that records what one service process sends it: each
 * statement executed (an extended-protocol Execute, or a simple Query) with its SQL and when the
 * proxy passed it on, and round trips (Syncs and simple Queries: the client waits for an answer
 * after each). For tests that count statements on a path; the server's `log_statement` needs a
 * superuser setting the test database may not allow.
 */
import { startTcpProxy } from '../../packages/testing/src/index.js';
import { proxiedUrl } from './proxied-url.js';

/** One statement the client sent. */
export interface PgStatement {
  /** `Date.now()` when the proxy passed it on. */
  readonly at: number;
  readonly sql: string;
}

export interface PgCounter {
  readonly url: string;
  /** Every statement so far, over all connections through the proxy, in the order sent. */
  statements(): readonly PgStatement[];
  /** Round trips so far (Syncs and simple Queries). */
  roundTrips(): number;
  close(): Promise<void>;
}

/** Startup-phase request codes that the server answers with one byte, before a startup message. */
const SSL_REQUEST = 80877103;
const GSS_REQUEST = 80877104;

export async function startPgCounter(target: URL): Promise<PgCounter> {
  const statements: PgStatement[] = [];
  let roundTrips = 0;
  /** Reads one connection's client messages: the statements it executes and its round trips. */
  const observe = () => {
    let pending: Buffer = Buffer.alloc(0);
    let started = false;
    /** SQL of the connection's prepared statements by name ('' the unnamed one). */
    const prepared = new Map<string, string>();
    let bound = '';
    const cstring = (body: Buffer, from: number): [string, number] => {
      const end = body.indexOf(0, from);
      return [body.toString('utf8', from, end), end + 1];
    };
    const read = () => {
      for (;;) {
        if (!started) {
          if (pending.length < 8) return;
          const length = pending.readInt32BE(0);
          if (pending.length < length) return;
          const code = pending.readInt32BE(4);
          if (code !== SSL_REQUEST && code !== GSS_REQUEST) started = true;
          pending = pending.subarray(length);
          continue;
        }
        if (pending.length < 5) return;
        const type = String.fromCharCode(pending[0]!);
        const length = pending.readInt32BE(1);
        if (pending.length < 1 + length) return;
        const body = pending.subarray(5, 1 + length);
        pending = pending.subarray(1 + length);
        if (type === 'P') {
          const [name, next] = cstring(body, 0);
          prepared.set(name, cstring(body, next)[0]);
        } else if (type === 'B') {
          const [, next] = cstring(body, 0);
          bound = cstring(body, next)[0];
        } else if (type === 'E') {
          statements.push({ at: Date.now(), sql: prepared.get(bound) ?? '?' });
        } else if (type === 'Q') {
          statements.push({ at: Date.now(), sql: cstring(body, 0)[0] });
          roundTrips++;
        } else if (type === 'S') {
          roundTrips++;
        }
      }
    };
    return {
      up(chunk: Buffer) {
        pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
        read();
      },
    };
  };
  const proxy = await startTcpProxy(
    { host: target.hostname, port: Number(target.port || 5432) },
    { observe },
  );
  return {
    url: proxiedUrl(target, proxy.port),
    statements: () => statements,
    roundTrips: () => roundTrips,
    close: () => proxy.close(),
  };
}
