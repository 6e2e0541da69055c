import { createRequire } from 'node:module';
import type * as Ioredis from 'ioredis';
import type { Cluster, Redis as StandaloneRedis, RedisOptions } from 'ioredis';
import { wakeOnSwitchMaster } from './sentinel-wake.js';
import { parseRedisUrl, type RedisTarget } from './target.js';

/**
 * A connection of any mode: a single server or a Sentinel-managed master (ioredis `Redis`), or
 * a Redis Cluster (ioredis `Cluster`). Commands are the same; `isCluster` tells them apart
 * where it matters (keys, multi-key deletes, scans, duplicates).
 */
export type Redis = StandaloneRedis | Cluster;

export interface CreateRedisOptions {
  /**
   * Connection name (`CLIENT SETNAME`), so `CLIENT LIST` tells an operator, and a test, which
   * replica and role holds a connection. Spaces are replaced by `-` (Redis refuses them).
   */
  name: string;
  /**
   * How many reconnects a queued command survives before it rejects; `null` waits forever.
   * A finite bound keeps callers from hanging while Redis is down. @default 20
   */
  maxRetriesPerRequest?: number | null;
  /**
   * A command without a reply after this long rejects (`Command timed out`), whether it waits
   * in the offline queue for a reconnect or on a connection that went silent. Only for
   * connections that send no blocking commands (a blocked `XREAD` or BullMQ's waits would be
   * cut). @default no timeout
   */
  commandTimeoutMs?: number;
  /** Upper bound of the exponential reconnect backoff. @default 2000 */
  maxReconnectDelayMs?: number;
  /**
   * Receives connection errors (refused, reset, timeouts). ioredis keeps reconnecting after
   * them; without a listener it prints each one to the console.
   */
  onError?: (err: Error) => void;
  /**
   * A Cluster connection for sharded pub/sub (`SSUBSCRIBE`): it keeps one subscriber connection
   * per master and resubscribes each channel where its slot moves. ioredis reacts to the
   * `sunsubscribe` push of a slot migration with a slot refresh, but drops a push that arrives
   * while a refresh is under way (or whose refresh read a node that has not heard of the move
   * yet), so this connection also refreshes its slots every {@link SHARDED_SLOTS_REFRESH_MS}:
   * a subscription lost that way comes back within that time. Ignored off Cluster.
   * @default false
   */
  shardedSubscriber?: boolean;
  /** Escape hatch for anything else ioredis supports (TLS, ...); applied last, per node. */
  redisOptions?: RedisOptions;
}

/** How often a sharded subscriber re-reads the slot map, see `shardedSubscriber`. */
export const SHARDED_SLOTS_REFRESH_MS = 2_000;

let ioredis: typeof Ioredis | undefined;

/**
 * ioredis on first use, not at import: a process without `REDIS_URL` never loads it. A
 * CommonJS package, so `require` gives the instance an `import` of it (by BullMQ) gets too.
 */
export function loadIoredis(): typeof Ioredis {
  ioredis ??= createRequire(import.meta.url)('ioredis') as typeof Ioredis;
  return ioredis;
}

/** How long apart a command is retried while a Cluster fails over, and how many times. */
const CLUSTER_RETRY_DELAY_MS = 250;
const CLUSTER_MAX_RETRIES = 40;

/**
 * Opens a Redis connection that connects at once and never gives up reconnecting: to the
 * server of a URL (`target` a string, or `{ mode: 'standalone', url }`), to the master a
 * Sentinel group names, or to a Redis Cluster.
 *
 * Why these settings: replicas must ride out a Redis restart or failover without a process
 * restart, so reconnects back off exponentially (with jitter, capped) forever; `READONLY`
 * replies after a failover force a reconnect to the new primary; commands issued while
 * disconnected are queued but bounded by `maxRetriesPerRequest`, so nobody waits forever.
 * Sentinel: the client asks the sentinels for the master at every (re)connect, and a client
 * waiting to reconnect (its master died) reconnects the moment they announce the promoted
 * replica (`+switch-master`, `sentinel-wake.ts`). Cluster: the client
 * follows `MOVED`/`ASK` redirections and refreshes its slot map, reconnecting with the same
 * backoff.
 */
export function createRedis(target: string | RedisTarget, options: CreateRedisOptions): Redis {
  const resolved: RedisTarget =
    typeof target === 'string' ? { mode: 'standalone', url: target } : target;
  const { Redis: StandaloneRedis, Cluster } = loadIoredis();
  const maxDelay = options.maxReconnectDelayMs ?? 2_000;
  const backoff = (times: number) =>
    Math.round(Math.min(50 * 2 ** times, maxDelay) * (0.5 + Math.random() / 2));
  const common: RedisOptions = {
    connectionName: options.name.replace(/\s+/g, '-'),
    maxRetriesPerRequest:
      options.maxRetriesPerRequest === undefined ? 20 : options.maxRetriesPerRequest,
    reconnectOnError: (err) => err.message.startsWith('READONLY'),
    ...(options.commandTimeoutMs ? { commandTimeout: options.commandTimeoutMs } : {}),
  };
  let redis: Redis;
  switch (resolved.mode) {
    case 'standalone':
      redis = new StandaloneRedis(resolved.url, {
        ...common,
        lazyConnect: false,
        retryStrategy: backoff,
        ...options.redisOptions,
      });
      break;
    case 'sentinel': {
      const sentinels = resolved.sentinels.map(hostPort);
      const credentials = sentinelCredentials(resolved);
      const client = new StandaloneRedis({
        ...parseRedisUrl(resolved.url),
        ...common,
        sentinels,
        name: resolved.name,
        ...credentials,
        // Off: ioredis's detector, when a second sentinel announces the same switch while the
        // client is asking the sentinels again, closes the connector mid-attempt, and the client
        // ends for good ('Connection is closed.'; seen in tests/redis-modes.test.ts under load).
        // sentinel-wake.ts reconnects the clients waiting to; a client still on a master that was
        // demoted (a manual failover) reconnects at its first write (READONLY, above).
        failoverDetector: false,
        lazyConnect: false,
        retryStrategy: backoff,
        sentinelRetryStrategy: backoff,
        ...options.redisOptions,
      });
      wakeOnSwitchMaster(client, StandaloneRedis, sentinels, resolved.name, credentials);
      redis = client;
      break;
    }
    case 'cluster':
      redis = new Cluster(resolved.nodes.map(hostPort), {
        lazyConnect: false,
        shardedSubscribers: options.shardedSubscriber === true,
        ...(options.shardedSubscriber === true
          ? { slotsRefreshInterval: SHARDED_SLOTS_REFRESH_MS }
          : {}),
        clusterRetryStrategy: backoff,
        // While a master's slots are unserved (CLUSTERDOWN: its replica not promoted yet,
        // `cluster-node-timeout` plus an election) a command is retried every 250 ms for up to
        // 10 s, instead of ioredis's 16 tries 100 ms apart, so a failover looks to callers as it
        // does on Sentinel: a request's command waits, bounded by its own command timeout
        // (REDIS_COMMAND_TIMEOUT_MS), and succeeds once the replica serves the slots.
        retryDelayOnClusterDown: CLUSTER_RETRY_DELAY_MS,
        retryDelayOnTryAgain: CLUSTER_RETRY_DELAY_MS,
        retryDelayOnFailover: CLUSTER_RETRY_DELAY_MS,
        maxRedirections: CLUSTER_MAX_RETRIES,
        // Off: when the ready check fails (`CLUSTER INFO` says `cluster_state:fail`, as it does
        // between a master's death and its replica's promotion), ioredis 6 reconnects but never
        // settles the promise of the `connect()` that ran the check. BullMQ awaits exactly that
        // when it resets a blocking connection after a failover, and every worker of the process
        // stopped taking jobs for good (tests/faults/redis-cluster-failover.test.ts, the master of
        // the queues' slot killed). Without the check the client is ready once it has the slot
        // map; a command to a slot nobody serves yet is retried on `CLUSTERDOWN` (above).
        enableReadyCheck: false,
        redisOptions: {
          ...withoutDb(parseRedisUrl(resolved.url)),
          ...common,
          ...options.redisOptions,
        },
      });
      break;
  }
  if (options.onError) redis.on('error', options.onError);
  return redis;
}

/** ioredis's options for the sentinels' own credentials, only those that are set. */
function sentinelCredentials(target: Extract<RedisTarget, { mode: 'sentinel' }>): {
  sentinelUsername?: string;
  sentinelPassword?: string;
} {
  return {
    ...(target.sentinelUsername ? { sentinelUsername: target.sentinelUsername } : {}),
    ...(target.sentinelPassword ? { sentinelPassword: target.sentinelPassword } : {}),
  };
}

/** A cluster has database 0 only (`SELECT` is refused). */
function withoutDb(options: RedisOptions): RedisOptions {
  const { db: _db, ...rest } = options;
  return rest;
}

function hostPort(address: string): { host: string; port: number } {
  const at = address.lastIndexOf(':');
  return {
    host: address.slice(0, at).replace(/^\[|\]$/g, ''),
    port: Number(address.slice(at + 1)),
  };
}

/**
 * A new connection like `source` (same mode, servers and settings) with `overrides` applied to
 * each server connection: for blocking readers and subscribers, which need their own.
 */
export function duplicateRedis(source: Redis, overrides: RedisOptions = {}): Redis {
  if (source.isCluster) {
    const cluster = source as Cluster;
    return cluster.duplicate(undefined, {
      ...cluster.options,
      redisOptions: { ...cluster.options.redisOptions, ...overrides },
    });
  }
  const copy = (source as StandaloneRedis).duplicate(overrides);
  const { sentinels, name, sentinelUsername, sentinelPassword } = copy.options;
  if (sentinels && name)
    wakeOnSwitchMaster(
      copy,
      loadIoredis().Redis,
      sentinels as Array<{ host: string; port: number }>,
      name,
      { sentinelUsername, sentinelPassword },
    );
  return copy;
}

/** The connection name (`CLIENT SETNAME`) `redis` was opened with, in any mode. */
export function connectionNameOf(redis: Redis): string | undefined {
  return redis.isCluster
    ? (redis as Cluster).options.redisOptions?.connectionName
    : (redis as StandaloneRedis).options.connectionName;
}

/**
 * Closes a connection gracefully (`QUIT`, letting pending replies arrive), forcibly when `QUIT`
 * takes longer than `graceMs`, and at once when not connected. Resolves once the connection has
 * ended and every queued command has settled (rejected when it could not be sent), so a caller
 * waiting on Redis never hangs past shutdown. Never rejects: closing is cleanup, and a failed
 * cleanup must not mask the original error.
 */
export async function closeRedis(redis: Redis, graceMs = 1_000): Promise<void> {
  if (redis.status === 'end') return;
  let timer: NodeJS.Timeout | undefined;
  const ended = new Promise<void>((resolve) => {
    redis.once('end', resolve);
    timer = setTimeout(resolve, graceMs * 2);
  });
  let quit = false;
  if (redis.status === 'ready') {
    const force = setTimeout(() => redis.disconnect(), graceMs);
    quit = await redis.quit().then(
      () => true,
      () => false,
    );
    clearTimeout(force);
  }
  // Disconnecting while ioredis waits to reconnect would leave queued commands pending forever;
  // a fresh connect attempt makes disconnect() reject them and end the connection.
  if (redis.status === 'reconnecting') redis.connect().catch(() => undefined);
  // A Cluster that answered QUIT ends once its node connections have closed; disconnect() then
  // would close it a second time and leave it in `close` instead of `end`.
  const status: string = redis.status;
  if (!(quit && redis.isCluster) && status !== 'end') redis.disconnect();
  await ended;
  clearTimeout(timer);
}
