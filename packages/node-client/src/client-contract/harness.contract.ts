import type { NodeInfo, NodeType, ParsedToolResult } from '@agent-backend/protocol';

/**
 * What the client tests need from a gateway. The fake in `testing/fake-gateway.ts` implements
 * it today; the real gateway can implement it with `pnpm token:issue`-style tokens, the node
 * listing (`GET /node/devices`), the node tool caller and a restart of the gateway process.
 */
export interface GatewayHarness {
  /** `ws://host:port` of the gateway. */
  readonly url: string;
  /** A valid access token for the user. */
  token(userId: string): Promise<string>;
  /** A token the gateway refuses (garbage, expired, wrong signature). */
  invalidToken(): string;
  /** The user's registered nodes as the node listing returns them. */
  listNodes(userId: string): Promise<NodeInfo[]>;
  /** The tool descriptors each node registered with. */
  listTools(userId: string): Promise<HarnessTools[]>;
  /** Sends a `tools/call` to a node and returns its answer. */
  callTool(call: HarnessToolCall): Promise<HarnessToolOutcome>;
  /**
   * Ends every connection of the user from the server side, without a final close code (a
   * network failure or a server restart); the gateway stays reachable at `url`.
   */
  dropConnections(userId: string): Promise<void>;
  close(): Promise<void>;
}

export interface HarnessTools {
  nodeId: string;
  nodeType: NodeType;
  tools: Array<{ name: string; description?: string; inputSchema?: Record<string, unknown> }>;
}

export interface HarnessToolCall {
  userId: string;
  nodeType: NodeType;
  nodeId?: string;
  name: string;
  arguments: Record<string, unknown>;
  sessionId?: string;
}

export type HarnessToolOutcome =
  { ok: true; result: ParsedToolResult } | { ok: false; code: number; message: string };
