import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { exited } from '@agent-backend/testing';

const REDIS_SERVER = process.env.FAULTS_REDIS_SERVER ?? '/usr/bin/redis-server';

/** A free TCP port on loopback (closed again at once). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * A Redis server of the test's own, never the shared one other tests use: no persistence
 * (`--save ''`, no AOF), so a restart comes back empty, as a Redis without persistence (or a
 * replacement node) does.
 */
export interface OwnRedis {
  readonly port: number;
  readonly url: string;
  /** SIGTERM, then wait for the exit. Clients see their connections reset and refused. */
  stop(): Promise<void>;
  /** Starts it again on the same port, empty. */
  start(): Promise<void>;
  /** `CLIENT KILL TYPE <type>` (`normal` or `pubsub`): how many connections it cut. */
  clientKill(type: 'normal' | 'pubsub'): Promise<number>;
  /** Names of the connected clients (`CLIENT SETNAME`), from `CLIENT LIST`. */
  clientNames(): Promise<string[]>;
  close(): Promise<void>;
}

export async function startOwnRedis(): Promise<OwnRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const admin = () =>
    new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 }).on(
      'error',
      () => undefined,
    );
  const start = async () => {
    child = spawn(
      REDIS_SERVER,
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    const deadline = Date.now() + 10_000;
    for (;;) {
      const probe = admin();
      try {
        await probe.connect();
        if ((await probe.ping()) === 'PONG') return;
      } catch {
        if (Date.now() > deadline) throw new Error(`redis-server on ${port} did not start`);
        await new Promise((r) => setTimeout(r, 50));
      } finally {
        probe.disconnect();
      }
    }
  };
  const stop = async () => {
    if (!child) return;
    const current = child;
    child = undefined;
    current.kill('SIGTERM');
    await exited(current);
  };
  const withAdmin = async <T>(fn: (redis: Redis) => Promise<T>): Promise<T> => {
    const redis = admin();
    try {
      await redis.connect();
      return await fn(redis);
    } finally {
      redis.disconnect();
    }
  };
  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    start,
    stop,
    clientKill: (type) =>
      withAdmin(async (r) => Number(await r.call('CLIENT', 'KILL', 'TYPE', type, 'SKIPME', 'yes'))),
    clientNames: () =>
      withAdmin(async (r) =>
        String(await r.call('CLIENT', 'LIST'))
          .split('\n')
          .map((line) => /\bname=(\S*)/.exec(line)?.[1] ?? '')
          .filter(Boolean),
      ),
    close: stop,
  };
}
