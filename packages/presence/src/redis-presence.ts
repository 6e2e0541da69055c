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
  ASK_AGAIN,
  entryScripts,
  heartbeatScript,
  liveReplicasAtScript,
  liveReplicasScript,
  takeOverOneSlotScript,
} from './presence-scripts.js';
import { LiveReplicasCache, type LiveReplicas } from './live-replicas-cache.js';

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

const ONE_SLOT = entryScripts('key');
const PER_USER = entryScripts('args');

/**
 * The distributed presence store (used when `REDIS_URL` is set). Every operation is one Lua
 * script (see `presence-scripts.ts`), timed by the Redis server clock. Keys: one hash per user
 * (`presenceUser`, expiring `nodeTtlMs` after its last write) and one sorted set of replicas
 * (`presenceReplicas`).
 *
 * Off a Cluster the scripts of an entry read the user's hash and the replicas' set together.
 * On a Cluster each user's hash has a slot of its own, so users spread over the masters; the
 * scripts then get the live replicas as arguments, from a short-lived cache (its staleness
 * bounds are in `live-replicas-cache.ts`). The compare of `upsertNode`/`touchNode` stays
 * inside the user's script, atomic as before.
 *
 * Upgrade fallback, Cluster only: versions before the per-user slots kept every user's hash in
 * the replicas' slot (`presenceUserOneSlot`), and during a rolling upgrade old gateways still
 * write there. So `getNode` and `listNodes` also read that hash (with the old scripts, which
 * can read the replicas' set beside it) and merge it in, the new layout winning per node;
 * `upsertNode` first compares with the node's entry there (a later connection of the same
 * instance wins, nothing is written) and deletes it, so a node taken over by an upgraded gateway
 * leaves no older entry that would show again once the new one is removed; and `removeNode`
 * and `removeUser` delete in both. The compare of the two layouts is not one atomic step (two
 * slots): a write of an old gateway between them can still lose to an older connection. Old replicas do not read the new layout: until
 * every replica is upgraded, they miss the nodes of new gateways. The fallback can go in the
 * release after this one: by then no gateway writes the old layout, and what it wrote expired
 * `nodeTtlMs` after its last touch.
 */
class RedisPresence implements Presence {
  private closing: Promise<void> | undefined;
  /** The live replicas for the per-user scripts; only on a Cluster. */
  private readonly replicas: LiveReplicasCache | undefined;

  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly ttls: Ttls,
    private readonly owned: boolean,
  ) {
    if (redis.isCluster) {
      this.replicas = new LiveReplicasCache(
        async () => parseLive(await this.readLive()),
        ttls.replicaTtlMs,
      );
    }
  }

  async heartbeatReplica(replicaId: string): Promise<boolean> {
    this.check({ replicaId });
    const was = await heartbeatScript(
      this.redis,
      [this.keys.presenceReplicas()],
      [replicaId, this.ttls.replicaTtlMs],
    );
    this.replicas?.beat(replicaId);
    return was === 1;
  }

  async removeReplica(replicaId: string): Promise<void> {
    this.check({ replicaId });
    await this.redis.zrem(this.keys.presenceReplicas(), replicaId);
    this.replicas?.removed(replicaId);
  }

  async liveReplicas(): Promise<string[]> {
    this.check({});
    if (this.replicas) {
      const sentAt = performance.now();
      const { now, ids } = parseLive(await this.readLive());
      this.replicas.store(sentAt, now, ids);
      return [...ids].sort();
    }
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
    if (this.replicas) {
      // The upgrade fallback (see the class): the entry an older version wrote gives way, or wins.
      const keys = [this.keys.presenceUserOneSlot(userId), this.keys.presenceReplicas()];
      const order = [nodeId, connection?.instance ?? '', connection?.seq ?? ''];
      const held = (await takeOverOneSlotScript(this.redis, keys, order)) as string | null;
      if (held !== null) return decodeEntry(userId, nodeId, held);
    }
    const value = (await this.run('upsert', userId, args)) as string;
    return decodeEntry(userId, nodeId, value);
  }

  async touchNode(
    userId: string,
    nodeId: string,
    patch?: Record<string, unknown>,
    connection?: ConnectionOrder,
  ): Promise<boolean> {
    this.check({ userId, nodeId });
    const order = [connection?.instance ?? '', connection?.seq ?? ''];
    if (!patch) {
      const args = [nodeId, this.ttls.nodeTtlMs, '', '', ...order];
      return (await this.run('touch', userId, args)) !== 0;
    }
    for (let attempt = 0; attempt < TOUCH_ATTEMPTS; attempt++) {
      const current = await this.redis.hget(this.keys.presenceUser(userId), nodeId);
      if (current === null) return false;
      const entry = decodeEntry(userId, nodeId, current);
      const data = JSON.parse(storedData(entry.data, patch)) as unknown;
      const tail = JSON.stringify([
        entry.connectedAt,
        entry.replicaId,
        body(entry.nodeType, data, entry.connection),
      ]);
      const args = [nodeId, this.ttls.nodeTtlMs, current, tail.slice(1), ...order];
      const result = await this.run('touch', userId, args);
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
    const [removed, removedOld] = await Promise.all([
      this.run('remove', userId, args),
      this.replicas && this.runOneSlot('remove', userId, args),
    ]);
    return removed === 1 || removedOld === 1;
  }

  async getNode(userId: string, nodeId: string): Promise<PresenceEntry | null> {
    this.check({ userId, nodeId });
    const [, value] = await this.read(userId, nodeId);
    return value === undefined ? null : decodeEntry(userId, nodeId, value);
  }

  async listNodes(userId: string): Promise<PresenceEntry[]> {
    this.check({ userId });
    const flat = await this.read(userId, '');
    const entries: PresenceEntry[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2)
      entries.push(decodeEntry(userId, flat[i]!, flat[i + 1]!));
    return entries.sort(byConnection);
  }

  async removeUser(userId: string): Promise<number> {
    this.check({ userId });
    const keys = [this.keys.presenceUser(userId)];
    // The upgrade fallback (see the class): the hash an older version wrote, in another slot.
    if (this.replicas) keys.push(this.keys.presenceUserOneSlot(userId));
    const fields = await Promise.all(
      keys.map(async (key) => {
        // One key per transaction: on a Cluster the two keys sit in different slots.
        const replies = await this.redis.multi().hkeys(key).unlink(key).exec();
        const [error, names] = replies?.[0] ?? [new Error('presence: removeUser was not executed')];
        if (error) throw error;
        return names as string[];
      }),
    );
    return new Set(fields.flat()).size;
  }

  close(): Promise<void> {
    this.closing ??= this.owned ? closeRedis(this.redis) : Promise.resolve();
    return this.closing;
  }

  /**
   * Runs an entry script on the user's hash. On a Cluster with the cached live replicas, and
   * when the script asks (an entry of a replica the list may have missed), once more with a
   * list read after it ran.
   */
  private async run(
    name: keyof typeof ONE_SLOT,
    userId: string,
    args: (string | number)[],
  ): Promise<unknown> {
    const key = this.keys.presenceUser(userId);
    if (!this.replicas) {
      return ONE_SLOT[name](this.redis, [key, this.keys.presenceReplicas()], args);
    }
    const cached = await this.replicas.current();
    const first = await PER_USER[name](this.redis, [key], liveArgs(args, 'ask', cached));
    if (first !== ASK_AGAIN) return first;
    const fresh = await this.replicas.refresh();
    return PER_USER[name](this.redis, [key], liveArgs(args, 'final', fresh));
  }

  /** Runs an entry script of the old one-slot layout (the upgrade fallback, Cluster only). */
  private runOneSlot(
    name: keyof typeof ONE_SLOT,
    userId: string,
    args: (string | number)[],
  ): Promise<unknown> {
    const keys = [this.keys.presenceUserOneSlot(userId), this.keys.presenceReplicas()];
    return ONE_SLOT[name](this.redis, keys, args);
  }

  /** `[nodeId, value, ...]` of the visible entries; on a Cluster merged with the old layout's. */
  private async read(userId: string, nodeId: string): Promise<string[]> {
    const [current, old] = await Promise.all([
      this.run('read', userId, [nodeId]) as Promise<string[]>,
      this.replicas && (this.runOneSlot('read', userId, [nodeId]) as Promise<string[]>),
    ]);
    if (!old || old.length === 0) return current;
    const merged = new Map<string, string>();
    for (const flat of [old, current])
      for (let i = 0; i + 1 < flat.length; i += 2) merged.set(flat[i]!, flat[i + 1]!);
    return [...merged].flat();
  }

  private readLive(): Promise<unknown> {
    return liveReplicasAtScript(this.redis, [this.keys.presenceReplicas()], []);
  }

  private check(ids: Record<string, unknown>): void {
    if (this.closing) throw new PresenceClosedError();
    checkIds(ids);
  }
}

/** A script's own arguments, then the live replicas (`args` liveness, `presence-scripts.ts`). */
function liveArgs(
  args: (string | number)[],
  mode: 'ask' | 'final',
  live: LiveReplicas,
): (string | number)[] {
  return [...args, mode, live.since, ...live.ids];
}

/** The reply of `liveReplicasAtScript`: the server time, then the ids. */
function parseLive(reply: unknown): { now: number; ids: string[] } {
  const [now, ...ids] = reply as string[];
  return { now: Number(now), ids };
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
