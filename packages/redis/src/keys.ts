/**
 * The one place every Redis key and pub/sub channel name is built.
 *
 * Everything the service stores in or publishes through Redis sits under one configurable
 * prefix, so several deployments can share a Redis and every test can isolate itself with a
 * unique prefix (and clean up with `SCAN MATCH <prefix>*`). Adding a key anywhere else is a bug:
 * it would escape both the namespace and the cleanup.
 *
 * Layout (with the default prefix `ab:`):
 *
 * | name | type | owner |
 * |---|---|---|
 * | `ab:bus:pub:<channel>` | pub/sub channel | bus, `publish`/`subscribe` |
 * | `ab:bus:req:<channel>` | pub/sub channel | bus, `request`/`respond` |
 * | `ab:bus:inbox:<nodeId>` | pub/sub channel | bus, replies to one node |
 * | `ab:eph:<key>` | string with PX TTL | ephemeral store |
 * | `ab:presence:user:<userId>` | hash nodeId → entry | presence |
 * | `ab:presence:replicas` | sorted set replicaId → expiry (ms) | presence |
 * | `ab:limit:<name>:<key>` | integer: units of the rate window leased to replicas, PX window | limits, request rates |
 * | `ab:limit:<pool>:<userId>` | sorted set holder id → lease end (ms) (`runs`, `streams`, `node_connections`, `web_connections`) | limits, slots |
 * | `ab:limit:tokens:<userId>:<day>` | integer: model tokens of a UTC day, PEXPIRE 2 days | limits, token budgets |
 * | `ab:runlog:<runId>` | stream of a run's events, PX retention | run log (resumable agent streams) |
 * | `ab:bull:<queue>:*` | BullMQ's own keys (its `prefix` option) | job queue (`@agent-backend/jobs`) |
 *
 * Redis Cluster (`redisKeys(prefix, { cluster: true })`, used on a Cluster connection): a
 * multi-key command or script must name keys of one hash slot, so the names whose keys go
 * together carry a hash tag (`{...}`, only the part in braces picks the slot):
 *
 * | name | on a Cluster | why |
 * |---|---|---|
 * | `presenceUser` | `ab:{ab:presence:<userId>}:user:<userId>` | a slot per user: each presence script uses one user's hash alone (the live replicas come as arguments), so users spread over the masters |
 * | `presenceReplicas` | `ab:{ab:presence}:replicas` | untouched by the tag change: one key, read and written alone |
 * | `presenceUserOneSlot` | `ab:{ab:presence}:user:<userId>` | where versions before the per-user slots kept every user's hash (beside the replicas' set); read and erased during a rolling upgrade (`redis-presence.ts`) |
 * | `jobs` | `ab:{ab:bull}` | BullMQ's scripts use several keys of a queue (BullMQ's documented Cluster setup: a `{...}` prefix) |
 *
 * Everything else names one key per command (or is a pub/sub channel, which has no slot under
 * plain PUBLISH) and stays as above. So all queues sit in one slot: Cluster spreads the bus,
 * each user's presence, the run logs, the limits and the ephemeral keys, not the queues.
 * Off Cluster (standalone, Sentinel) no name has a tag: the names are exactly those of the
 * table above, so an upgrade keeps reading what an older version stored (sessions' presence,
 * queued jobs, run logs). Switching an existing Redis to Cluster starts with empty presence
 * and queues (the tagged names are new keys).
 */

/** The prefix used when none is configured. */
export const DEFAULT_REDIS_PREFIX = 'ab:';

export interface RedisKeys {
  /** The prefix every name starts with. */
  readonly prefix: string;
  /** Channel carrying `publish`ed messages of a bus channel. */
  busChannel(channel: string): string;
  /**
   * Channel carrying requests of a bus channel. Separate from {@link busChannel} so PUBLISH's
   * receiver count is the number of nodes with a responder, not of mere subscribers.
   */
  busRequests(channel: string): string;
  /** Channel carrying replies addressed to one bus node. */
  busInbox(nodeId: string): string;
  /** An ephemeral key (leases, locks, approvals, caches). */
  ephemeral(key: string): string;
  /** Hash of one user's connected nodes. */
  presenceUser(userId: string): string;
  /**
   * On a Cluster, the name {@link presenceUser} had before each user got a slot of their own
   * (every user in the slot of {@link presenceReplicas}); off a Cluster, the same as
   * {@link presenceUser}. Only the presence store's upgrade fallback uses it.
   */
  presenceUserOneSlot(userId: string): string;
  /** Sorted set of gateway replicas scored by the expiry of their last heartbeat. */
  presenceReplicas(): string;
  /** A key of the limits (`<name>` a rate limit's prefix, `<pool>:<userId>` or `tokens:<userId>:<day>`). */
  limit(name: string): string;
  /** Stream of one agent run's events, read back to resume a dropped SSE stream. */
  runLog(runId: string): string;
  /** BullMQ's `prefix` option: every queue's keys sit under `<prefix>bull:<queue>:`. */
  jobs(): string;
}

/** Options of {@link redisKeys}. */
export interface RedisKeysOptions {
  /** Hash-tag the names whose keys a command or script uses together. @default false */
  cluster?: boolean;
}

/**
 * Builds every key and channel name from `prefix`.
 * @param prefix Usually ends with `:`. @default 'ab:'
 */
export function redisKeys(
  prefix: string = DEFAULT_REDIS_PREFIX,
  options: RedisKeysOptions = {},
): RedisKeys {
  // `ab:{ab:presence}`: under the prefix (so prefix scans and cleanups find it), the prefix in
  // the tag (so deployments sharing a Cluster land in different slots). A user id holding `}`
  // ends its presence tag early: it then shares a slot with a shorter id, which is harmless,
  // as every presence command still names one key.
  const group = (name: string) =>
    options.cluster ? `${prefix}{${prefix}${name}}` : `${prefix}${name}`;
  return Object.freeze({
    prefix,
    busChannel: (channel: string) => `${prefix}bus:pub:${channel}`,
    busRequests: (channel: string) => `${prefix}bus:req:${channel}`,
    busInbox: (nodeId: string) => `${prefix}bus:inbox:${nodeId}`,
    ephemeral: (key: string) => `${prefix}eph:${key}`,
    presenceUser: (userId: string) =>
      options.cluster
        ? `${prefix}{${prefix}presence:${userId}}:user:${userId}`
        : `${prefix}presence:user:${userId}`,
    presenceUserOneSlot: (userId: string) => `${group('presence')}:user:${userId}`,
    presenceReplicas: () => `${group('presence')}:replicas`,
    limit: (name: string) => `${prefix}limit:${name}`,
    runLog: (runId: string) => `${prefix}runlog:${runId}`,
    jobs: () => group('bull'),
  });
}
