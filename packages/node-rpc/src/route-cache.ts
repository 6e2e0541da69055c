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
 * staleness, for changes whose announcement was lost and replicas killed without one). Nothing
 * is cached until the subscription to the changes is in place.
 */
export class RouteCache {
  private readonly users = new Map<string, UserRoutes>();
  /** Counts the changes heard: a read that overlapped one is not cached (it may predate it). */
  private epoch = 0;
  private subscription: Promise<Subscription | undefined> | undefined;
  private listening = false;

  constructor(
    private readonly bus: Bus,
    private readonly presence: Presence,
    private readonly maxAgeMs: number,
  ) {}

  /** The user's nodes, cached or read now; `cached` tells which. */
  async nodes(
    userId: string,
    read: (presence: Presence, userId: string) => Promise<PresentNode[]>,
  ): Promise<{ nodes: PresentNode[]; cached: boolean }> {
    const hit = this.maxAgeMs > 0 ? this.users.get(userId) : undefined;
    if (hit && Date.now() - hit.readAt < this.maxAgeMs) return { nodes: hit.nodes, cached: true };
    if (hit) this.users.delete(userId);
    // Subscribed before the first read, so no change between the two goes unheard.
    if (this.maxAgeMs > 0 && !this.listening) await this.listen();
    const epoch = this.epoch;
    const readAt = Date.now();
    const nodes = await read(this.presence, userId);
    if (this.listening && epoch === this.epoch) {
      if (this.users.size >= MAX_USERS) this.users.delete(this.users.keys().next().value!);
      this.users.set(userId, { nodes, readAt });
    }
    return { nodes, cached: false };
  }

  /** Forgets the user's routes (a call found one stale). */
  drop(userId: string): void {
    this.epoch++;
    this.users.delete(userId);
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

  async close(): Promise<void> {
    this.listening = false;
    this.users.clear();
    const subscription = await this.subscription;
    await subscription?.unsubscribe();
  }

  private listen(): Promise<Subscription | undefined> {
    return (this.subscription ??= this.bus
      .subscribe(PRESENCE_CHANGES_CHANNEL, (raw) => this.onChange(raw))
      .then(
        (subscription) => {
          this.listening = true;
          return subscription;
        },
        () => {
          // No announcements: every call reads presence, as without a cache; retried later.
          this.subscription = undefined;
          return undefined;
        },
      ));
  }

  private onChange(raw: unknown): void {
    const change = PresenceChange.safeParse(raw);
    if (!change.success) return;
    this.epoch++;
    if (change.data.kind === 'node') {
      this.users.delete(change.data.userId);
      return;
    }
    const gone = change.data.replicaId;
    for (const [userId, { nodes }] of this.users)
      if (nodes.some((node) => node.replicaId === gone)) this.users.delete(userId);
  }
}
