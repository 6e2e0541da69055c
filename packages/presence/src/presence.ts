import type { ConnectionOrder } from '@agent-backend/protocol';

/**
 * The presence port: which nodes (browser extensions, desktop apps) are connected, to which
 * gateway replica, and which replicas are alive.
 *
 * In the contract:
 * - A node entry is owned by the replica holding its connection and lives until it is removed,
 *   its TTL (`nodeTtlMs`, refreshed by `touchNode`/`upsertNode`) runs out, or its replica stops
 *   heartbeating for longer than `replicaTtlMs`. Listings and lookups never return an entry in
 *   the last two cases: a replica killed without cleanup leaves no ghosts past that bound.
 * - A replica is live only between a `heartbeatReplica` and `replicaTtlMs` later (or its
 *   `removeReplica`). Nodes of a replica that is not live are invisible, so a gateway calls
 *   `heartbeatReplica` before it upserts its first node, and every `replicaTtlMs / 3` or so.
 * - Times (`connectedAt` default, `lastSeenAt`, expiry) come from one clock shared by all
 *   replicas: the Redis server's (`TIME`) for the Redis adapter, so replicas' clock skew does not
 *   shorten or extend TTLs; the process clock for the in-process one.
 * - `data` is JSON: stored and returned as `JSON.stringify` would send it; callers get copies.
 * - `removeNode` with a replica id only removes the entry if that replica still owns it, so a
 *   late cleanup on an old replica never removes a node that reconnected elsewhere.
 * - After `close()` every method rejects with `PresenceClosedError`; `close()` is idempotent.
 *
 * Not in the contract: prompt deletion of expired entries (they are filtered out on every read
 * and deleted lazily), and durability (a Redis restart forgets presence: the gateway's next
 * `heartbeatReplica` resolves false, and it upserts every node it holds again).
 */
export interface Presence {
  /**
   * Marks `replicaId` alive for `replicaTtlMs`. Gateways call it on an interval. Resolves to
   * whether the replica was live before this beat: false on its first beat, after
   * `removeReplica`, after it stalled past its TTL, or when the store lost it (a Redis restarted
   * empty), and then the replica's node entries may be gone too.
   */
  heartbeatReplica(replicaId: string): Promise<boolean>;
  /** Marks a replica gone at once (clean shutdown); its nodes disappear from listings with it. */
  removeReplica(replicaId: string): Promise<void>;
  /** Ids of the live replicas, sorted. */
  liveReplicas(): Promise<string[]>;
  /**
   * Creates or replaces a node entry and refreshes its TTL. `lastSeenAt` is stamped by the
   * adapter; `connectedAt` defaults to now. Resolves to the stored entry.
   *
   * Newer connection wins by the client's order: when the entry's `connection` is stale next to
   * the visible stored one's (same instance, lower sequence: `isStaleConnection`), nothing is
   * written and the stored entry is returned unchanged, so the caller sees another `connection`
   * than its own. The compare and the write are one atomic step (one Lua script in Redis); on a
   * Cluster during an upgrade, the entry an older version left in the one-slot layout is compared
   * (and erased) in a step of its own before it (`redis-presence.ts`).
   */
  upsertNode(entry: PresenceUpsert): Promise<PresenceEntry>;
  /**
   * Refreshes a node's TTL and `lastSeenAt`, and shallow-merges `patch` into its data (a key set
   * to `undefined` is removed, as JSON drops it); false when the entry is gone or invisible.
   * With the toucher's `connection`: false too, and nothing written, when the entry holds a later
   * connection of the same instance (`isStaleConnection`), so a superseded connection still open
   * neither refreshes nor rewrites its successor's entry (its caller upserts, and is refused).
   */
  touchNode(
    userId: string,
    nodeId: string,
    patch?: Record<string, unknown>,
    connection?: ConnectionOrder,
  ): Promise<boolean>;
  /**
   * @returns whether a live entry was removed. An expired or invisible entry is deleted too
   * (whoever owned it) but reported as false.
   */
  removeNode(userId: string, nodeId: string, options?: { replicaId?: string }): Promise<boolean>;
  getNode(userId: string, nodeId: string): Promise<PresenceEntry | null>;
  /** All live nodes of a user, oldest connection first (ties by `nodeId`). */
  listNodes(userId: string): Promise<PresenceEntry[]>;
  /**
   * Deletes every entry of the user, live or not, whichever replica owns it (the user's data
   * erased). A gateway still holding one of their connections would upsert it again, so the
   * caller closes those first. @returns how many entries were stored.
   */
  removeUser(userId: string): Promise<number>;
  close(): Promise<void>;
}

export interface PresenceEntry {
  readonly userId: string;
  readonly nodeId: string;
  /** `extension` or `desktop`. */
  readonly nodeType: string;
  /** The gateway replica holding the connection. */
  readonly replicaId: string;
  /** Epoch ms of the connection. */
  readonly connectedAt: number;
  /** Epoch ms of the last upsert or touch, by the presence clock. */
  readonly lastSeenAt: number;
  /** The node's record (spec 2.1 fields), JSON. */
  readonly data: Record<string, unknown>;
  /** The order of the connection the client named (`instance_id`, `connection_seq`), if any. */
  readonly connection?: ConnectionOrder;
}

/**
 * What a replica passes to `upsertNode`. A {@link PresenceEntry} fits, so an entry read back can
 * be upserted again.
 */
export interface PresenceUpsert extends Omit<PresenceEntry, 'connectedAt' | 'lastSeenAt'> {
  /** Epoch ms of the connection. @default now, by the presence clock */
  readonly connectedAt?: number;
  /** Ignored: the adapter stamps `lastSeenAt` itself, with the shared clock. */
  readonly lastSeenAt?: number;
}

export interface PresenceOptions {
  /** A node not touched for this long is gone. @default 90_000 */
  nodeTtlMs?: number;
  /** A replica not heartbeating for this long is dead, and so are its nodes. @default 15_000 */
  replicaTtlMs?: number;
}

/** The TTL defaults, in one place for both adapters. */
export const PRESENCE_DEFAULTS = { nodeTtlMs: 90_000, replicaTtlMs: 15_000 } as const;
