import type { NodeType, ParsedToolResult } from '@agent-backend/protocol';

/**
 * Calls tools on a user's connected nodes (browser extensions, desktop apps) through the
 * gateway replica that holds the node's WebSocket, from any process (spec 4.3 rule 3).
 *
 * In the contract: `callTool` always settles within its deadline. It rejects with a
 * {@link NodeCallError} whose `code` tells the cases apart: `node_not_found` (no such online
 * node for this user, known at once), `node_disconnected` (the node dropped mid-call, known at
 * once), `timeout` (no answer by the deadline), `tool_failed` (JSON-RPC error from the node,
 * e.g. -32603), `aborted` (the caller's signal). A tool result with `isError: true` resolves
 * with `success: false` (spec 6.2: `isError` maps to the success status).
 */
export interface NodeToolCaller {
  /** The tools the user's online nodes offer (from their `register` message), per node. */
  listTools(userId: string): Promise<NodeTools[]>;
  callTool(request: NodeToolCall): Promise<ParsedToolResult>;
  /** Releases what the caller holds open (its subscription to presence changes), if anything. */
  close?(): Promise<void>;
}

export interface NodeTools {
  nodeId: string;
  nodeType: NodeType;
  /**
   * Tasks the node runs at once (its `max_concurrent_tasks`, spec 2.1); it refuses more with
   * a busy error. Absent: unknown, no limit is applied by the caller.
   */
  maxConcurrentTasks?: number;
  /**
   * Tool names, or richer descriptors where the node sent them (name, description, JSON schema,
   * and `writes: false` for tools that change nothing; absent means it writes).
   */
  tools: Array<{
    name: string;
    description?: string;
    inputSchema?: Record<string, unknown>;
    writes?: boolean;
  }>;
}

export interface NodeToolCall {
  userId: string;
  nodeType: NodeType;
  /** A specific node; omitted: the first available node of that type (spec 4.3 rule 1). */
  nodeId?: string;
  toolName: string;
  arguments: Record<string, unknown>;
  sessionId?: string;
  /** @default 60_000 (spec 8) */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export type NodeCallErrorCode =
  'node_not_found' | 'node_disconnected' | 'timeout' | 'tool_failed' | 'aborted';

export class NodeCallError extends Error {
  constructor(
    readonly code: NodeCallErrorCode,
    message: string,
    /** The JSON-RPC error code for `tool_failed`. */
    readonly rpcCode?: number,
  ) {
    super(message);
    this.name = 'NodeCallError';
  }
}
