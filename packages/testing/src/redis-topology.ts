import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';

const run = promisify(execFile);

/** One `redis-server` process of a test topology. */
export interface RedisProcess {
  readonly port: number;
  /** Ends the process (SIGKILL: a crash, not a shutdown) and waits for it to exit. */
  kill(): Promise<void>;
}

/** A local Redis Cluster: six `redis-server` processes, three masters with a replica each. */
export interface TestRedisCluster {
  /** `host:port` of every node, the value of `REDIS_CLUSTER_NODES`. */
  readonly nodes: string[];
  readonly processes: RedisProcess[];
  /** Stops every process and removes their directories. Idempotent. */
  stop(): Promise<void>;
}

/** A local Sentinel group: a master, a replica and three sentinels. */
export interface TestRedisSentinel {
  /** `host:port` of every sentinel, the value of `REDIS_SENTINELS`. */
  readonly sentinels: string[];
  /** The monitored master's name, the value of `REDIS_SENTINEL_NAME`. */
  readonly name: string;
  readonly master: RedisProcess;
  readonly replica: RedisProcess;
  /** Stops every process and removes their directories. Idempotent. */
  stop(): Promise<void>;
}

const HOST = '127.0.0.1';

/** Whether `port` can be bound on loopback now. */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, HOST, () => server.close(() => resolve(true)));
  });
}

/**
 * `count` consecutive free ports (and, for cluster nodes, their bus ports at +10000). The base
 * is drawn from a range of its own per vitest worker, away from 6379 and the ephemeral range,
 * and checked by binding, so parallel test files and other services do not collide.
 */
async function freePorts(count: number, withBus: boolean): Promise<number[]> {
  const worker = Number(process.env.VITEST_POOL_ID ?? process.env.VITEST_WORKER_ID ?? 0) % 16;
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + worker * 1_000 + Math.floor(Math.random() * 95) * 10;
    const ports = Array.from({ length: count }, (_, i) => base + i);
    const all = withBus ? [...ports, ...ports.map((p) => p + 10_000)] : ports;
    const free = await Promise.all(all.map(portFree));
    if (free.every(Boolean)) return ports;
  }
  throw new Error(`no ${count} free loopback ports found`);
}

function startServer(dir: string, args: string[], port: number): RedisProcess {
  const child: ChildProcess = spawn('redis-server', args, {
    cwd: dir,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    port,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

/** Resolves once `port` answers PING (a fresh connection per try, no reconnect noise). */
async function waitForPing(port: number, password?: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const auth = password ? ['-a', password, '--no-auth-warning'] : [];
  for (;;) {
    const ok = await run('redis-cli', ['-h', HOST, '-p', String(port), ...auth, 'PING']).then(
      ({ stdout }) => stdout.trim() === 'PONG',
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not start`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** No persistence; a replica's first sync starts at once (Redis 7 waits 5 s by default). */
function commonArgs(port: number): string[] {
  return [
    ...['--port', String(port), '--bind', HOST, '--save', '', '--appendonly', 'no'],
    ...['--repl-diskless-sync-delay', '0'],
  ];
}

/**
 * Whether the server on `port` is a master or a replica that finished its sync: a replica that
 * never synced is not promoted (its data counts as too old), so failover tests wait for this.
 */
async function replicationUp(port: number): Promise<boolean> {
  const { stdout } = await run('redis-cli', [
    '-h',
    HOST,
    '-p',
    String(port),
    'INFO',
    'replication',
  ]);
  return stdout.includes('role:master') || stdout.includes('master_link_status:up');
}

/**
 * Starts a Redis Cluster of six processes on loopback (three masters, one replica each), each in
 * a temp directory, and waits until every node reports `cluster_state:ok`.
 */
export async function startTestRedisCluster(): Promise<TestRedisCluster> {
  const root = mkdtempSync(join(tmpdir(), 'redis-cluster-'));
  const ports = await freePorts(6, true);
  const processes = ports.map((port) =>
    startServer(
      root,
      [
        ...commonArgs(port),
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        `nodes-${port}.conf`,
        '--cluster-node-timeout',
        '2000',
      ],
      port,
    ),
  );
  const stop = once(async () => {
    await Promise.all(processes.map((p) => p.kill()));
    rmSync(root, { recursive: true, force: true });
  });
  try {
    await Promise.all(ports.map((port) => waitForPing(port)));
    const nodes = ports.map((port) => `${HOST}:${port}`);
    await run('redis-cli', [
      '--cluster',
      'create',
      ...nodes,
      '--cluster-replicas',
      '1',
      '--cluster-yes',
    ]);
    await waitFor(async () => {
      const states = await Promise.all(
        ports.map((port) =>
          run('redis-cli', ['-h', HOST, '-p', String(port), 'CLUSTER', 'INFO']).then(
            ({ stdout }) => stdout.includes('cluster_state:ok'),
            () => false,
          ),
        ),
      );
      return states.every(Boolean);
    }, 'the cluster to report cluster_state:ok');
    await waitFor(
      async () => (await Promise.all(ports.map(replicationUp))).every(Boolean),
      'every replica to finish its first sync',
    );
    return { nodes, processes, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * Starts a Sentinel group on loopback: a master, a replica of it and three sentinels (quorum 2,
 * a master is judged down after 1 s), each in a temp directory, and waits until every sentinel
 * knows the master and the replica.
 */
export async function startTestRedisSentinel(
  name = 'abmaster',
  options: {
    /** The sentinels require it (`requirepass`), and give it to each other. */
    sentinelPassword?: string;
  } = {},
): Promise<TestRedisSentinel> {
  const { sentinelPassword } = options;
  const root = mkdtempSync(join(tmpdir(), 'redis-sentinel-'));
  const [masterPort, replicaPort, ...sentinelPorts] = (await freePorts(5, false)) as [
    number,
    number,
    ...number[],
  ];
  const master = startServer(root, commonArgs(masterPort), masterPort);
  const replica = startServer(
    root,
    [...commonArgs(replicaPort), '--replicaof', HOST, String(masterPort)],
    replicaPort,
  );
  const sentinelProcesses = sentinelPorts.map((port) => {
    const file = join(root, `sentinel-${port}.conf`);
    writeFileSync(
      file,
      [
        `port ${port}`,
        `bind ${HOST}`,
        `dir ${root}`,
        `sentinel monitor ${name} ${HOST} ${masterPort} 2`,
        `sentinel down-after-milliseconds ${name} 1000`,
        `sentinel failover-timeout ${name} 5000`,
        `sentinel parallel-syncs ${name} 1`,
        ...(sentinelPassword
          ? [`requirepass ${sentinelPassword}`, `sentinel sentinel-pass ${sentinelPassword}`]
          : []),
        '',
      ].join('\n'),
    );
    return startServer(root, [file, '--sentinel'], port);
  });
  const all = [master, replica, ...sentinelProcesses];
  const stop = once(async () => {
    await Promise.all(all.map((p) => p.kill()));
    rmSync(root, { recursive: true, force: true });
  });
  try {
    await Promise.all(
      all.map((p) =>
        waitForPing(p.port, sentinelPorts.includes(p.port) ? sentinelPassword : undefined),
      ),
    );
    await waitFor(async () => {
      const known = await Promise.all(
        sentinelPorts.map(async (port) => {
          const client = new Redis({
            host: HOST,
            port,
            lazyConnect: true,
            retryStrategy: null,
            ...(sentinelPassword ? { password: sentinelPassword } : {}),
          });
          try {
            await client.connect();
            const replicas = (await client.call('SENTINEL', 'REPLICAS', name)) as unknown[];
            const sentinels = (await client.call('SENTINEL', 'SENTINELS', name)) as unknown[];
            return replicas.length === 1 && sentinels.length === 2;
          } catch {
            return false;
          } finally {
            client.disconnect();
          }
        }),
      );
      return known.every(Boolean) && (await replicationUp(replicaPort));
    }, 'every sentinel to know the replica and the other sentinels, and the replica to sync');
    return {
      sentinels: sentinelPorts.map((port) => `${HOST}:${port}`),
      name,
      master,
      replica,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () => (done ??= fn());
}

/** A Cluster or Sentinel test topology, as `@agent-backend/redis` takes it (`RedisTarget`). */
export type TestRedisTarget =
  | { mode: 'cluster'; url: string; nodes: string[] }
  | { mode: 'sentinel'; url: string; sentinels: string[]; name: string };

/** The two non-standalone modes, for `for (const mode of REDIS_TOPOLOGIES)` in test files. */
export const REDIS_TOPOLOGIES = ['cluster', 'sentinel'] as const;

export interface RedisTopologies {
  /** Where the file's Cluster or Sentinel group is (between the file's hooks). */
  target(mode: 'cluster' | 'sentinel'): TestRedisTarget;
  readonly cluster: TestRedisCluster;
  readonly sentinel: TestRedisSentinel;
}

/**
 * A Redis Cluster and a Sentinel group (or those of `modes`) for one test file: started before
 * its tests, stopped after them. Keys need no cleanup, the servers keep nothing.
 */
export function redisTopologies(
  hooks: {
    beforeAll(fn: () => unknown, timeout?: number): void;
    afterAll(fn: () => unknown, timeout?: number): void;
  },
  modes: readonly ('cluster' | 'sentinel')[] = REDIS_TOPOLOGIES,
): RedisTopologies {
  let cluster: TestRedisCluster | undefined;
  let sentinel: TestRedisSentinel | undefined;
  hooks.beforeAll(async () => {
    [cluster, sentinel] = await Promise.all([
      modes.includes('cluster') ? startTestRedisCluster() : undefined,
      modes.includes('sentinel') ? startTestRedisSentinel() : undefined,
    ]);
  }, 60_000);
  hooks.afterAll(async () => {
    await Promise.all([cluster?.stop(), sentinel?.stop()]);
  });
  const started = <T>(value: T | undefined): T => {
    if (!value) throw new Error('redisTopologies: the servers start in beforeAll');
    return value;
  };
  return {
    get cluster() {
      return started(cluster);
    },
    get sentinel() {
      return started(sentinel);
    },
    target(mode) {
      if (mode === 'cluster') {
        const { nodes } = started(cluster);
        return { mode, url: `redis://${nodes[0]!}`, nodes };
      }
      const { sentinels, name } = started(sentinel);
      return { mode, url: `redis://${sentinels[0]!}`, sentinels, name };
    },
  };
}
