import {
  isStaleConnection,
  WS_CLOSE,
  type NodeRecord,
  type NodeStatus,
  type NodeType,
} from '@agent-backend/protocol';
import {
  gatewayChannel,
  PRESENCE_CHANGES_CHANNEL,
  type PresenceChange,
} from '@agent-backend/node-rpc';
import type { GatewayServices } from './gateway-services.js';
import type { RegisteredNode } from './local-registry.js';
import type { Refreshable } from './presence-refreshes.js';

/** The node connection whose entry a {@link NodePresence} writes. */
export interface PresentNode extends RegisteredNode {
  readonly nodeType: NodeType;
  /** Spec 2.1's fields as presence stores them; the connection changes them in place. */
  readonly record: NodeRecord;
  readonly isOpen: boolean;
}

/**
 * The presence entry of one node connection: written when the node connects, registers or
 * changes its status or tasks; its TTL extended when due (a third of `NODE_SILENT_TIMEOUT_MS`
 * after the last write, in the replica's batch of refreshes); written again whole when Redis
 * lost it; and each write that changed the node's route announced to the callers that cache
 * routes. Never more than one refresh waiting or in flight.
 */
export class NodePresence implements Refreshable {
  /** When the entry was last written (ms since the epoch; 0: never, or must be rewritten). */
  private refreshedAt = 0;
  /** A write of a change to `record` failed: presence may hold an older record until rewritten. */
  private changeLost = false;
  /** Presence writes are failing; the first failure was logged as a warning, the rest at debug. */
  private failing = false;
  /** A refresh (TTL only) waits in the replica's batch or is in flight; another adds nothing. */
  private refreshing = false;
  /**
   * The status the last announced presence write stored. Route caches use a node's status
   * (offline and busy nodes are picked last) but not its tasks: a write that changes only
   * `current_tasks` is not announced (every busy node's heartbeats would drop its user's routes).
   */
  private announcedStatus: NodeStatus | undefined;

  constructor(
    private readonly node: PresentNode,
    private readonly services: GatewayServices,
  ) {}

  /** Presence may hold an older record than the connection's (a write of a change failed). */
  get behind(): boolean {
    return this.changeLost;
  }

  /**
   * Lists the connection as the node's, here and in presence, and closes its older one (4009)
   * here or on the replica holding it; but a connection older than one the node has from the
   * same client instance (`isStaleConnection`: here, or in presence's atomic compare) is
   * refused (4011) instead. @returns whether the connection is now the node's.
   */
  async publish(): Promise<boolean> {
    const { node } = this;
    // A register frame read before the socket closed must not list a closed connection.
    if (!node.isOpen) return false;
    const { registry, presence, replicaId, bus, logger } = this.services;
    const { connection } = node.identity;
    const held = registry.node(node.userId, node.nodeId);
    if (held && held !== node && isStaleConnection(connection, held.identity.connection)) {
      this.refuseAsStale();
      return false;
    }
    const older = registry.addNode(node);
    older?.close(WS_CLOSE.replaced, 'replaced by a newer connection of this node');
    const existing = await presence.getNode(node.userId, node.nodeId);
    // The upsert compares with the entry it replaces; this also covers one the previous
    // version of the service wrote (on a Cluster, under the one-slot layout `getNode` merges).
    if (existing && isStaleConnection(connection, existing.connection)) {
      this.refuseAsStale();
      return false;
    }
    const stored = await presence.upsertNode({
      userId: node.userId,
      nodeId: node.nodeId,
      nodeType: node.nodeType,
      replicaId,
      ...(existing?.replicaId === replicaId ? { connectedAt: existing.connectedAt } : {}),
      ...(connection ? { connection } : {}),
      data: node.record,
    });
    if (isStaleConnection(connection, stored.connection)) {
      this.refuseAsStale();
      return false;
    }
    this.refreshedAt = Date.now();
    this.announcedStatus = node.record.status;
    // Awaited: what the node is told next (`registered`) means callers' route caches heard it.
    await this.announceChange(node.nodeId);
    if (existing && existing.replicaId !== replicaId) {
      const replace = {
        kind: 'replace',
        userId: node.userId,
        nodeId: node.nodeId,
        byReplica: replicaId,
        ...(connection ? { connection } : {}),
      };
      await bus
        .request(gatewayChannel(existing.replicaId), replace, { timeoutMs: 2_000 })
        .catch((error: unknown) => {
          logger.debug(
            { err: error, node: node.nodeId },
            'older connection could not be replaced (replica gone?)',
          );
        });
    }
    return true;
  }

  /**
   * Refreshes the entry, merging `patch` (the fields of `record` that changed). Never rejects: a
   * failure is logged, and when it lost a change (`patch`, or a rewrite of the whole record) the
   * next heartbeat writes the record's status and tasks again.
   */
  async touch(patch?: Partial<NodeRecord>): Promise<void> {
    const { node } = this;
    if (!node.isOpen) return;
    let found: boolean;
    try {
      // Not found either when a later connection of this client instance holds the entry:
      // the upsert below is then refused and this one closes as stale (4011).
      const { connection } = node.identity;
      found = await this.services.presence.touchNode(node.userId, node.nodeId, patch, connection);
    } catch (error) {
      this.writeFailed(error, patch !== undefined);
      return;
    }
    try {
      // Our entry expired (e.g. Redis lost it): write it again, we still hold the node.
      if (!found && node.isOpen) await this.publish();
      else this.refreshedAt = Date.now();
      if (found && patch?.status !== undefined && patch.status !== this.announcedStatus) {
        this.announcedStatus = patch.status;
        await this.announceChange(node.nodeId);
      }
    } catch (error) {
      this.writeFailed(error, true);
      return;
    }
    // A refresh without a patch writes no change, so it does not repair a lost one.
    if (patch || !found) this.changeLost = false;
    this.failing = false;
  }

  /**
   * Extends the entry's TTL when nothing wrote it for a third of its TTL: an idle node's
   * heartbeats, pings and pongs come far more often than that, and a Redis command for each was
   * most of an idle gateway's work. The entry's TTL still has two thirds left when refreshed.
   */
  refreshIfDue(): void {
    if (Date.now() - this.refreshedAt < this.services.presenceRefreshMs) return;
    this.refresh();
  }

  /**
   * Refreshes the entry with the replica's next batch whatever its age, and writes it whole if
   * it is gone: the replica's heartbeat found presence had lost the replica (a Redis restarted
   * empty), so this node is missing from every listing until then.
   */
  rewrite(): void {
    this.refreshedAt = 0;
    this.refresh();
  }

  /**
   * Extends the entry's TTL without waiting for Redis, with the replica's next batch of
   * refreshes ({@link PresenceRefreshes}). It changes no data, so it needs no order against the
   * connection's other writes, and one waiting or in flight at a time is enough (a client
   * flooding pings cannot pile up Redis commands).
   */
  private refresh(): void {
    if (this.refreshing) return;
    this.refreshing = true;
    this.services.refreshes.add(this);
  }

  /**
   * Runs the refresh {@link refresh} queued (called by the batch), unless a write meanwhile (the
   * node's registration, a change) made it needless.
   */
  refreshNow(): void {
    if (Date.now() - this.refreshedAt < this.services.presenceRefreshMs) {
      this.refreshing = false;
      return;
    }
    void this.touch().finally(() => {
      this.refreshing = false;
    });
  }

  /** The connection closed: no refresh of it is sent any more. */
  forget(): void {
    this.services.refreshes.delete(this);
  }

  /**
   * Tells the callers that cache routes to the user's nodes (API replicas) that the entry of
   * `nodeId` changed, after the write. Best effort: they read presence again at the latest after
   * their route age bound.
   */
  announceChange(nodeId: string): Promise<void> {
    const change: PresenceChange = { kind: 'node', userId: this.node.userId, nodeId };
    return this.services.bus.publish(PRESENCE_CHANGES_CHANNEL, change).then(
      () => undefined,
      (error: unknown) => {
        this.services.logger.debug(
          { err: error, node: nodeId },
          'could not announce the presence change',
        );
      },
    );
  }

  /** Leaves the node to a later connection of the same client instance, and closes (4011). */
  private refuseAsStale(): void {
    const { node } = this;
    this.services.registry.removeNode(node);
    this.services.logger.debug(
      { node: node.nodeId, user: node.userId },
      'refused a stale node connection',
    );
    node.close(WS_CLOSE.stale, 'stale: a later connection of this client instance holds the node');
  }

  private writeFailed(error: unknown, lostChange: boolean): void {
    if (lostChange) this.changeLost = true;
    const { node } = this;
    const log = { err: error, node: node.nodeId, user: node.userId, stale: this.changeLost };
    const { logger } = this.services;
    if (this.failing) logger.debug(log, 'presence write failed again');
    else logger.warn(log, 'presence write failed; the next heartbeat or pong retries it');
    this.failing = true;
  }
}
