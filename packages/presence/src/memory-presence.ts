import {
  byConnection,
  checkConnectedAt,
  checkIds,
  resolveTtls,
  storedData,
  type Ttls,
} from './entries.js';
import { isStaleConnection, type ConnectionOrder } from '@agent-backend/protocol';
import { PresenceClosedError } from './errors.js';
import type { Presence, PresenceEntry, PresenceOptions, PresenceUpsert } from './presence.js';

export interface MemoryPresenceOptions extends PresenceOptions {
  /** Clock in epoch ms; tests inject a fake one to expire entries without waiting. @default Date.now */
  now?: () => number;
}

interface Stored {
  readonly entry: Omit<PresenceEntry, 'data'>;
  /** `data` as JSON, so callers never share objects with the store (same as Redis). */
  readonly data: string;
  readonly expiresAt: number;
}

/**
 * The embedded presence store (used when `REDIS_URL` is unset): Maps with lazy expiry, the same
 * rules as the Redis adapter. Expired entries are filtered on read and deleted then.
 */
class MemoryPresence implements Presence {
  private readonly replicas = new Map<string, number>();
  private readonly users = new Map<string, Map<string, Stored>>();
  private readonly ttls: Ttls;
  private readonly now: () => number;
  private closed = false;

  constructor(options: MemoryPresenceOptions) {
    this.ttls = resolveTtls(options);
    this.now = options.now ?? Date.now;
  }

  async heartbeatReplica(replicaId: string): Promise<boolean> {
    this.check({ replicaId });
    const was = this.replicaLive(replicaId);
    this.replicas.set(replicaId, this.now() + this.ttls.replicaTtlMs);
    return was;
  }

  async removeReplica(replicaId: string): Promise<void> {
    this.check({ replicaId });
    this.replicas.delete(replicaId);
  }

  async liveReplicas(): Promise<string[]> {
    this.check({});
    return [...this.replicas.keys()].filter((id) => this.replicaLive(id)).sort();
  }

  async upsertNode(input: PresenceUpsert): Promise<PresenceEntry> {
    const { userId, nodeId, nodeType, replicaId } = input;
    this.check({ userId, nodeId, replicaId });
    const held = this.live(userId, nodeId);
    if (held && isStaleConnection(input.connection, held.entry.connection)) return toEntry(held);
    const now = this.now();
    const connectedAt = checkConnectedAt(input.connectedAt) ?? now;
    const { connection } = input;
    const stored: Stored = {
      entry: {
        userId,
        nodeId,
        nodeType,
        replicaId,
        connectedAt,
        lastSeenAt: now,
        ...(connection
          ? { connection: { instance: connection.instance, seq: connection.seq } }
          : {}),
      },
      data: storedData(input.data),
      expiresAt: now + this.ttls.nodeTtlMs,
    };
    const nodes = this.users.get(userId) ?? new Map<string, Stored>();
    nodes.set(nodeId, stored);
    this.users.set(userId, nodes);
    return toEntry(stored);
  }

  async touchNode(
    userId: string,
    nodeId: string,
    patch?: Record<string, unknown>,
    connection?: ConnectionOrder,
  ): Promise<boolean> {
    this.check({ userId, nodeId });
    const stored = this.live(userId, nodeId);
    if (!stored || isStaleConnection(connection, stored.entry.connection)) return false;
    const now = this.now();
    this.users.get(userId)?.set(nodeId, {
      entry: { ...stored.entry, lastSeenAt: now },
      data: patch
        ? storedData(JSON.parse(stored.data) as Record<string, unknown>, patch)
        : stored.data,
      expiresAt: now + this.ttls.nodeTtlMs,
    });
    return true;
  }

  async removeNode(
    userId: string,
    nodeId: string,
    options: { replicaId?: string } = {},
  ): Promise<boolean> {
    this.check(
      options.replicaId === undefined ? { userId, nodeId } : { userId, nodeId, ...options },
    );
    const nodes = this.users.get(userId);
    if (!nodes?.has(nodeId)) return false;
    const live = this.live(userId, nodeId);
    if (live && options.replicaId !== undefined && live.entry.replicaId !== options.replicaId) {
      return false;
    }
    nodes.delete(nodeId);
    if (nodes.size === 0) this.users.delete(userId);
    return live !== undefined;
  }

  async getNode(userId: string, nodeId: string): Promise<PresenceEntry | null> {
    this.check({ userId, nodeId });
    const stored = this.live(userId, nodeId);
    return stored ? toEntry(stored) : null;
  }

  async listNodes(userId: string): Promise<PresenceEntry[]> {
    this.check({ userId });
    const nodeIds = [...(this.users.get(userId)?.keys() ?? [])];
    return nodeIds
      .map((nodeId) => this.live(userId, nodeId))
      .filter((stored) => stored !== undefined)
      .map(toEntry)
      .sort(byConnection);
  }

  async removeUser(userId: string): Promise<number> {
    this.check({ userId });
    const count = this.users.get(userId)?.size ?? 0;
    this.users.delete(userId);
    return count;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.users.clear();
    this.replicas.clear();
  }

  /**
   * The entry if it is visible. An expired entry is deleted; one whose replica missed its
   * heartbeat is hidden but kept until its own TTL, so a briefly stalled replica gets it back.
   */
  private live(userId: string, nodeId: string): Stored | undefined {
    const nodes = this.users.get(userId);
    const stored = nodes?.get(nodeId);
    if (!nodes || !stored) return undefined;
    if (stored.expiresAt > this.now()) {
      return this.replicaLive(stored.entry.replicaId) ? stored : undefined;
    }
    nodes.delete(nodeId);
    if (nodes.size === 0) this.users.delete(userId);
    return undefined;
  }

  private replicaLive(replicaId: string): boolean {
    const expiresAt = this.replicas.get(replicaId);
    if (expiresAt === undefined) return false;
    if (expiresAt > this.now()) return true;
    this.replicas.delete(replicaId);
    return false;
  }

  private check(ids: Record<string, unknown>): void {
    if (this.closed) throw new PresenceClosedError();
    checkIds(ids);
  }
}

function toEntry(stored: Stored): PresenceEntry {
  return { ...stored.entry, data: JSON.parse(stored.data) as Record<string, unknown> };
}

/** An in-process {@link Presence}; state is per process and lost on exit. */
export function createMemoryPresence(options: MemoryPresenceOptions = {}): Presence {
  return new MemoryPresence(options);
}
