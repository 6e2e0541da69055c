import type { ToolCallRequest } from '@agent-backend/protocol';
import type { Connection } from './connection.js';
import type { NodeResponse } from './node-calls.js';

/** A node's connection as the registry and the gateway's commands use it. */
export interface RegisteredNode extends Connection {
  readonly nodeId: string;
  /** Sends a JSON-RPC request and resolves with the node's response, unvalidated. */
  call(request: ToolCallRequest, timeoutMs: number): Promise<NodeResponse>;
  /** Writes the node's presence entry again soon (presence lost this replica's entries). */
  writePresenceAgain(): void;
}

/**
 * The connections this replica holds. Shared presence says which replica holds a node; this
 * registry finds the socket on that replica.
 */
export class LocalRegistry {
  private readonly nodes = new Map<string, RegisteredNode>();
  private readonly web = new Map<string, Set<Connection>>();

  private static key(userId: string, nodeId: string): string {
    return `${userId}\u0000${nodeId}`;
  }

  /** Adds a node connection; returns the connection it replaces (same user and node id), if any. */
  addNode(conn: RegisteredNode): RegisteredNode | undefined {
    const key = LocalRegistry.key(conn.userId, conn.nodeId);
    const previous = this.nodes.get(key);
    this.nodes.set(key, conn);
    return previous === conn ? undefined : previous;
  }

  /** Removes the entry only if it is still this connection. @returns whether it was. */
  removeNode(conn: RegisteredNode, nodeId = conn.nodeId): boolean {
    const key = LocalRegistry.key(conn.userId, nodeId);
    if (this.nodes.get(key) !== conn) return false;
    this.nodes.delete(key);
    return true;
  }

  node(userId: string, nodeId: string): RegisteredNode | undefined {
    return this.nodes.get(LocalRegistry.key(userId, nodeId));
  }

  /** @returns true when this is the user's first web connection here (subscribe to the user). */
  addWeb(conn: Connection): boolean {
    let set = this.web.get(conn.userId);
    const first = !set;
    if (!set) this.web.set(conn.userId, (set = new Set()));
    set.add(conn);
    return first;
  }

  /** @returns true when this was the user's last web connection here (unsubscribe). */
  removeWeb(conn: Connection): boolean {
    const set = this.web.get(conn.userId);
    if (!set?.delete(conn)) return false;
    if (set.size > 0) return false;
    this.web.delete(conn.userId);
    return true;
  }

  webOf(userId: string): Iterable<Connection> {
    return this.web.get(userId) ?? [];
  }

  allNodes(): Iterable<RegisteredNode> {
    return this.nodes.values();
  }

  *all(): Iterable<RegisteredNode | Connection> {
    yield* this.nodes.values();
    for (const set of this.web.values()) yield* set;
  }

  get size(): { nodes: number; web: number } {
    let web = 0;
    for (const set of this.web.values()) web += set.size;
    return { nodes: this.nodes.size, web };
  }
}
