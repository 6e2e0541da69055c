import {
  closeRedis,
  createRedis,
  redisKeys,
  type Redis,
  type RedisKeys,
} from '@agent-backend/redis';
import type { ConnectionOrder } from '@agent-backend/protocol';
import {
  byConnection,
  checkConnectedAt,
  checkIds,
  resolveTtls,
  storedData,
  type Ttls,
} from './entries.js';
import { PresenceClosedError } from './errors.js';
import type { Presence, PresenceEntry, PresenceOptions, PresenceUpsert } from './presence.js';
import {
  heartbeatScript,
  liveReplicasScript,
  readScript,
  removeScript,
  touchScript,
  upsertScript,
} from './presence-scripts.js';

export type RedisPresenceOptions = PresenceOptions & {
  /** Key prefix, see `redisKeys`. @default 'ab:' */
  prefix?: string;
  /** Receives connection errors of a connection the store opened itself. */
  onError?: (err: Error) => void;
} & ({ url: string } | { /** Shared connection; the store does not close it. */ redis: Redis });

/**
 * How often a patched touch retries when the entry changed between its read and its write
 * (optimistic concurrency: merging JSON in Lua would need cjson's lossy encoder). Conflicts
 * need concurrent patches of one node, which only its owner replica sends; jittered backoff
 * spreads out the rare collisions.
 */
const TOUCH_ATTEMPTS = 25;

/**
 * The distributed presence store (used when `REDIS_URL` is set). Every operation is one Lua
 * script (see `presence-scripts.ts`), timed by the Redis server clock. Keys: one hash per user
 * (`<prefix>presence:user:<userId>`, expiring `nodeTtlMs` after its last write) and one sorted
 * set of replicas (`<prefix>presence:replicas`).
 */
class RedisPresence implements Presence {
  private closing: Promise<void> | undefined;

  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly ttls: Ttls,
    private readonly owned: boolean,
  ) {}

  async heartbeatReplica(replicaId: string): Promise<boolean> {
    this.check({ replicaId });
    const was = await heartbeatScript(
      this.redis,
      [this.keys.presenceReplicas()],
      [replicaId, this.ttls.replicaTtlMs],
    );
    return was === 1;
  }

  async removeReplica(replicaId: string): Promise<void> {
    this.check({ replicaId });
    await this.redis.zrem(this.keys.presenceReplicas(), replicaId);
  }

  async liveReplicas(): Promise<string[]> {
    this.check({});
    const ids = (await liveReplicasScript(
      this.redis,
      [this.keys.presenceReplicas()],
      [],
    )) as string[];
    return ids.sort();
  }

  async upsertNode(input: PresenceUpsert): Promise<PresenceEntry> {
    const { userId, nodeId, nodeType, replicaId } = input;
    this.check({ userId, nodeId, replicaId });
    const connectedAt = checkConnectedAt(input.connectedAt) ?? '';
    const { connection } = input;
    const tail = JSON.stringify([
      replicaId,
      body(nodeType, JSON.parse(storedData(input.data)), connection),
    ]);
    const args = [
      nodeId,
      this.ttls.nodeTtlMs,
      connectedAt,
      tail.slice(1),
      connection?.instance ?? '',
      connection?.seq ?? '',
    ];
    const value = (await upsertScript(this.redis, this.userKeys(userId), args)) as string;
    return decodeEntry(userId, nodeId, value);
  }

  async touchNode(
    userId: string,
    nodeId: string,
    patch?: Record<string, unknown>,
    connection?: ConnectionOrder,
  ): Promise<boolean> {
    this.check({ userId, nodeId });
    const keys = this.userKeys(userId);
    const order = [connection?.instance ?? '', connection?.seq ?? ''];
    if (!patch) {
      const args = [nodeId, this.ttls.nodeTtlMs, '', '', ...order];
      return (await touchScript(this.redis, keys, args)) !== 0;
    }
    for (let attempt = 0; attempt < TOUCH_ATTEMPTS; attempt++) {
      const current = await this.redis.hget(keys[0]!, nodeId);
      if (current === null) return false;
      const entry = decodeEntry(userId, nodeId, current);
      const data = JSON.parse(storedData(entry.data, patch)) as unknown;
      const tail = JSON.stringify([
        entry.connectedAt,
        entry.replicaId,
        body(entry.nodeType, data, entry.connection),
      ]);
      const args = [nodeId, this.ttls.nodeTtlMs, current, tail.slice(1), ...order];
      const result = await touchScript(this.redis, keys, args);
      if (result !== -1) return result !== 0;
      await new Promise((resolve) =>
        setTimeout(resolve, Math.random() * 2 ** Math.min(attempt, 6)),
      );
    }
    throw new Error(`touchNode(${userId}, ${nodeId}): entry kept changing, gave up`);
  }

  async removeNode(
    userId: string,
    nodeId: string,
    options: { replicaId?: string } = {},
  ): Promise<boolean> {
    this.check(
      options.replicaId === undefined ? { userId, nodeId } : { userId, nodeId, ...options },
    );
    const args = [nodeId, options.replicaId ?? ''];
    return (await removeScript(this.redis, this.userKeys(userId), args)) === 1;
  }

  async getNode(userId: string, nodeId: string): Promise<PresenceEntry | null> {
    this.check({ userId, nodeId });
    const [, value] = (await readScript(this.redis, this.userKeys(userId), [nodeId])) as string[];
    return value === undefined ? null : decodeEntry(userId, nodeId, value);
  }

  async listNodes(userId: string): Promise<PresenceEntry[]> {
    this.check({ userId });
    const flat = (await readScript(this.redis, this.userKeys(userId), [''])) as string[];
    const entries: PresenceEntry[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2)
      entries.push(decodeEntry(userId, flat[i]!, flat[i + 1]!));
    return entries.sort(byConnection);
  }

  async removeUser(userId: string): Promise<number> {
    this.check({ userId });
    const key = this.keys.presenceUser(userId);
    const replies = await this.redis.multi().hlen(key).unlink(key).exec();
    const [error, count] = replies?.[0] ?? [new Error('presence: removeUser was not executed')];
    if (error) throw error;
    return Number(count);
  }

  close(): Promise<void> {
    this.closing ??= this.owned ? closeRedis(this.redis) : Promise.resolve();
    return this.closing;
  }

  private userKeys(userId: string): [string, string] {
    return [this.keys.presenceUser(userId), this.keys.presenceReplicas()];
  }

  private check(ids: Record<string, unknown>): void {
    if (this.closing) throw new PresenceClosedError();
    checkIds(ids);
  }
}

/** The last element of a stored entry; `conn` only for a connection that named its order. */
interface Body {
  nodeType: string;
  data: unknown;
  conn?: [instance: string, seq: number];
}

function body(nodeType: string, data: unknown, connection: ConnectionOrder | undefined): Body {
  return connection
    ? { nodeType, data, conn: [connection.instance, connection.seq] }
    : { nodeType, data };
}

/** Parses `[expiresAt, lastSeenAt, connectedAt, replicaId, {nodeType, data, conn?}]`. */
function decodeEntry(userId: string, nodeId: string, value: string): PresenceEntry {
  const [, lastSeenAt, connectedAt, replicaId, stored] = JSON.parse(value) as [
    number,
    number,
    number,
    string,
    Body & { data: Record<string, unknown> },
  ];
  return {
    userId,
    nodeId,
    nodeType: stored.nodeType,
    replicaId,
    connectedAt,
    lastSeenAt,
    data: stored.data,
    ...(stored.conn ? { connection: { instance: stored.conn[0], seq: stored.conn[1] } } : {}),
  };
}

/**
 * A Redis-backed {@link Presence}. With `url` the store opens its own connection and quits it
 * on close; with `redis` it shares the caller's.
 */
export function createRedisPresence(options: RedisPresenceOptions): Presence {
  const ttls = resolveTtls(options);
  const keysOf = (redis: Redis) => redisKeys(options.prefix, { cluster: redis.isCluster });
  if ('redis' in options)
    return new RedisPresence(options.redis, keysOf(options.redis), ttls, false);
  const redis = createRedis(options.url, {
    name: 'presence',
    onError: options.onError ?? ((err) => process.emitWarning(err)),
  });
  return new RedisPresence(redis, keysOf(redis), ttls, true);
}
