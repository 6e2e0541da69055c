import { z } from 'zod';

/** The two kinds of node (spec 2.1). Web clients are connections, not nodes. */
export const NodeType = z.enum(['extension', 'desktop']);
export type NodeType = z.infer<typeof NodeType>;

/** Node states (spec 3.1): `online` accepts tasks, `busy` is executing, `offline` does not. */
export const NodeStatus = z.enum(['online', 'offline', 'busy']);
export type NodeStatus = z.infer<typeof NodeStatus>;

/**
 * A node as returned by `GET /node/devices` (spec 2.1).
 *
 * Every field is present in the output. The ones a `register` message may leave out default to
 * the same values as there (`node_name` `Unknown Node`, `max_concurrent_tasks` 3, empty lists,
 * `current_tasks` 0), and the free-text `os`, `os_version`, `app_version` to `''`, so the gateway
 * can build the listing from whatever the node registered with.
 */
export const NodeInfo = z.object({
  node_id: z.string().min(1),
  node_type: NodeType,
  node_name: z.string().default('Unknown Node'),
  status: NodeStatus,
  os: z.string().default(''),
  os_version: z.string().default(''),
  app_version: z.string().default(''),
  capabilities: z.array(z.string()).default([]),
  available_tools: z.array(z.string()).default([]),
  current_tasks: z.number().int().nonnegative().default(0),
  max_concurrent_tasks: z.number().int().positive().default(3),
  is_connected: z.boolean(),
});
export type NodeInfo = z.infer<typeof NodeInfo>;

const QUERY_BOOLEANS = ['true', 'false', '1', '0'] as const;

/**
 * Query string of `GET /node/devices` (spec 4.8).
 *
 * `online_only` arrives as text: only `true`/`false`/`1`/`0` are accepted, because silently
 * reading `yes` or `TRUE` as false would list offline nodes to a client that asked not to see
 * them. A boolean is accepted too, so a parsed query parses again unchanged. A repeated
 * parameter (an array) is rejected.
 */
export const ListNodesQuery = z.object({
  user_id: z.string().min(1),
  node_type: NodeType.optional(),
  online_only: z
    .preprocess(
      (value) => (typeof value === 'boolean' ? String(value) : value),
      z.enum(QUERY_BOOLEANS, { error: 'online_only must be one of true, false, 1, 0' }),
    )
    .transform((value) => value === 'true' || value === '1')
    .default(false),
});
export type ListNodesQuery = z.infer<typeof ListNodesQuery>;
export type ListNodesQueryInput = z.input<typeof ListNodesQuery>;

/** 200 answer of `GET /node/devices`; `total` is the length of `nodes` (no paging). */
export const ListNodesResponse = z.object({
  nodes: z.array(NodeInfo),
  total: z.number().int().nonnegative(),
});
export type ListNodesResponse = z.infer<typeof ListNodesResponse>;

/**
 * Body of `POST /node/tools/call` (beyond the spec): calls one tool on one of the caller's own
 * nodes through whichever gateway replica holds it, the same path the agent uses (spec 4.3
 * rule 3). Lets a web client, an operator or a test drive a device tool directly.
 */
export const NodeToolCallRequest = z.object({
  node_type: NodeType,
  /** A specific node; omitted: the first available node of the type. */
  node_id: z.string().min(1).optional(),
  tool_name: z.string().min(1),
  /** @default {} */
  arguments: z.record(z.string(), z.unknown()).default({}),
  session_id: z.string().min(1).optional(),
  /** Deadline in ms. @default 60000 (spec 8) */
  timeout_ms: z.number().int().min(100).max(600_000).optional(),
});
export type NodeToolCallRequest = z.infer<typeof NodeToolCallRequest>;

/** 200 answer of `POST /node/tools/call`: the parsed result (spec 6.2), or the node's error. */
export const NodeToolCallResponse = z.object({
  success: z.boolean(),
  text: z.string(),
  images: z.array(z.object({ data: z.string(), mimeType: z.string() })),
  screenshot: z.string().optional(),
  /** Set when the node answered with a JSON-RPC error (e.g. -32603, tool execution failed). */
  error: z.object({ code: z.number().int(), message: z.string() }).optional(),
});
export type NodeToolCallResponse = z.infer<typeof NodeToolCallResponse>;
