import type { Bus, Subscription } from '@agent-backend/bus';
import type { Presence } from '@agent-backend/presence';
import { PRESENCE_CHANGES_CHANNEL, PresenceChange } from './gateway-commands.js';
import type { NodeRecord } from '@agent-backend/protocol';

/** A live node of presence with its record, typed. */
export interface PresentNode {
  readonly record: NodeRecord;
  /** The gateway replica holding the node's connection. */
  readonly replicaId: string;
}

/** A cached route: which replica holds a node of the user, as presence said when read. */
export interface CachedRoute {
  readonly userId: string;
  readonly nodeId: string;
  readonly replicaId: string;
}

interface UserRoutes {
  readonly nodes: PresentNode[];
  readonly readAt: number;
}

/** Users whose nodes one caller keeps at most (the oldest read is dropped first). */
const MAX_USERS = 10_000;

/**
 * The user's live nodes as last read from presence, per user, so a tool call does not read
 * Redis when nothing changed. An entry is dropped when a gateway announces a change of one of
 * the user's nodes or its own departure on {@link PRESENCE_CHANGES_CHANNEL}, when a call routed
 * on it finds the node gone, and at the latest `maxAgeMs` after its read (the bound on
 * staleness, for changes whose announcement was lost), and when presence no longer lists the
 * replica holding one of them alive (killed without announcing, checked every
 * `replicaCheckMs` while routes are cached). Nothing is cached until the subscription to the changes is in place, nor after {@link close}.
 */
export class RouteCache {
  private readonly users = new Map<string, UserRoutes>();
  /**
   * Per user with reads in flight: the changes heard since (a read that overlapped a change of
   * its user is not cached: it may predate it). Removed with the user's last read in flight, so
   * it holds no more users than reads are running.
   */
  private readonly reading = new Map<string, { changes: number; reads: number }>();
  private subscription: Promise<Subscription | undefined> | undefined;
  private listening = false;
  private closed = false;
  /** Checks the replicas of the cached routes are alive, while any route is cached. */
  private liveness: NodeJS.Timeout | undefined;

  constructor(
    private readonly bus: Bus,
    private readonly presence: Presence,
    private readonly maxAgeMs: number,
    /** How often the replicas of cached routes are checked alive (presence's replica TTL). */
    private readonly replicaCheckMs: number,
  ) {}

  /** The user's nodes as cached, when a read younger than `maxAgeMs` is; no Redis command. */
  cached(userId: string): PresentNode[] | undefined {
    if (this.maxAgeMs <= 0 || this.closed) return undefined;
    const hit = this.users.get(userId);
    return hit && Date.now() - hit.readAt < this.maxAgeMs ? hit.nodes : undefined;
  }

  /** The user's nodes, cached or read now; `cached` tells which. */
  async nodes(
    userId: string,
    read: (presence: Presence, userId: string) => Promise<PresentNode[]>,
  ): Promise<{ nodes: PresentNode[]; cached: boolean }> {
    const caching = this.maxAgeMs > 0 && !this.closed;
    const hit = caching ? this.users.get(userId) : undefined;
    if (hit && Date.now() - hit.readAt < this.maxAgeMs) return { nodes: hit.nodes, cached: true };
    if (hit) this.users.delete(userId);
    // Subscribed before the first read, so no change between the two goes unheard.
    if (caching && !this.listening) await this.listen();
    let reading = this.reading.get(userId);
    if (!reading) this.reading.set(userId, (reading = { changes: 0, reads: 0 }));
    reading.reads++;
    const changes = reading.changes;
    const readAt = Date.now();
    try {
      const nodes = await read(this.presence, userId);
      if (this.listening && changes === reading.changes) {
        if (this.users.size >= MAX_USERS) this.users.delete(this.users.keys().next().value!);
        this.users.set(userId, { nodes, readAt });
        this.liveness ??= setInterval(() => void this.dropDeadReplicas(), this.replicaCheckMs);
        this.liveness.unref();
      }
      return { nodes, cached: false };
    } finally {
      if (--reading.reads === 0) this.reading.delete(userId);
    }
  }

  /** Forgets the user's routes (a call found one stale). */
  drop(userId: string): void {
    this.changed(userId);
  }

  /** The routes held now, for diagnostics and tests. */
  routes(): CachedRoute[] {
    const now = Date.now();
    const routes: CachedRoute[] = [];
    for (const [userId, { nodes, readAt }] of this.users) {
      if (now - readAt >= this.maxAgeMs) continue;
      for (const { record, replicaId } of nodes)
        routes.push({ userId, nodeId: record.node_id, replicaId });
    }
    return routes;
  }

  /** Unsubscribes from the changes (also when the subscription is still being set up). */
  async close(): Promise<void> {
    this.closed = true;
    this.listening = false;
    this.users.clear();
    clearInterval(this.liveness);
    const subscription = await this.subscription;
    await subscription?.unsubscribe();
  }

  private listen(): Promise<Subscription | undefined> {
    return (this.subscription ??= this.bus
      .subscribe(PRESENCE_CHANGES_CHANNEL, (raw) => this.onChange(raw))
      .then(
        async (subscription) => {
          if (!this.closed) {
            this.listening = true;
            return subscription;
          }
          // Closed while subscribing: close() waits for this.
          await subscription.unsubscribe();
          return undefined;
        },
        () => {
          // No announcements: every call reads presence, as without a cache; retried later.
          this.subscription = undefined;
          return undefined;
        },
      ));
  }

  /**
   * Drops the routes to replicas presence no longer lists alive (killed without announcing
   * their departure): they go within about one replica TTL, however long `maxAgeMs` is.
   */
  private async dropDeadReplicas(): Promise<void> {
    if (this.users.size === 0) {
      clearInterval(this.liveness);
      this.liveness = undefined;
      return;
    }
    const live = new Set(await this.presence.liveReplicas().catch(() => undefined));
    if (live.size === 0) return; // unreadable (or no replica at all): the age bound applies
    for (const [userId, { nodes }] of this.users)
      if (nodes.some((node) => !live.has(node.replicaId))) this.users.delete(userId);
  }

  /** The user's routes are dropped, and a read of them in flight is not cached. */
  private changed(userId: string): void {
    this.users.delete(userId);
    const reading = this.reading.get(userId);
    if (reading) reading.changes++;
  }

  private onChange(raw: unknown): void {
    const change = PresenceChange.safeParse(raw);
    if (!change.success) return;
    if (change.data.kind === 'node') {
      this.changed(change.data.userId);
      return;
    }
    // Any read in flight may return a node of the replica gone.
    for (const reading of this.reading.values()) reading.changes++;
    const gone = change.data.replicaId;
    for (const [userId, { nodes }] of this.users)
      if (nodes.some((node) => node.replicaId === gone)) this.users.delete(userId);
  }
}
