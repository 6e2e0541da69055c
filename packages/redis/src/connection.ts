import { createRequire } from 'node:module';
import type * as Ioredis from 'ioredis';
import type { Redis, RedisOptions } from 'ioredis';

export type { Redis } from 'ioredis';

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
  /** Escape hatch for anything else ioredis supports (TLS, sentinels); applied last. */
  redisOptions?: RedisOptions;
}

let ioredis: typeof Ioredis | undefined;

/**
 * ioredis on first use, not at import: a process without `REDIS_URL` never loads it. A
 * CommonJS package, so `require` gives the instance an `import` of it (by BullMQ) gets too.
 */
function loadIoredis(): typeof Ioredis {
  ioredis ??= createRequire(import.meta.url)('ioredis') as typeof Ioredis;
  return ioredis;
}

/**
 * Opens a Redis connection that connects at once and never gives up reconnecting.
 *
 * Why these settings: replicas must ride out a Redis restart or failover without a process
 * restart, so reconnects back off exponentially (with jitter, capped) forever; `READONLY`
 * replies after a failover force a reconnect to the new primary; commands issued while
 * disconnected are queued but bounded by `maxRetriesPerRequest`, so nobody waits forever.
 */
export function createRedis(url: string, options: CreateRedisOptions): Redis {
  const { Redis } = loadIoredis();
  const maxDelay = options.maxReconnectDelayMs ?? 2_000;
  const redis = new Redis(url, {
    connectionName: options.name.replace(/\s+/g, '-'),
    lazyConnect: false,
    maxRetriesPerRequest:
      options.maxRetriesPerRequest === undefined ? 20 : options.maxRetriesPerRequest,
    retryStrategy: (times) =>
      Math.round(Math.min(50 * 2 ** times, maxDelay) * (0.5 + Math.random() / 2)),
    reconnectOnError: (err) => err.message.startsWith('READONLY'),
    ...(options.commandTimeoutMs ? { commandTimeout: options.commandTimeoutMs } : {}),
    ...options.redisOptions,
  });
  if (options.onError) redis.on('error', options.onError);
  return redis;
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
  if (redis.status === 'ready') {
    const force = setTimeout(() => redis.disconnect(), graceMs);
    await redis.quit().catch(() => undefined);
    clearTimeout(force);
  }
  // Disconnecting while ioredis waits to reconnect would leave queued commands pending forever;
  // a fresh connect attempt makes disconnect() reject them and end the connection.
  if (redis.status === 'reconnecting') redis.connect().catch(() => undefined);
  redis.disconnect();
  await ended;
  clearTimeout(timer);
}
