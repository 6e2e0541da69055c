import { z } from 'zod';
import { boundedJson, WS_JSON_BOUNDS } from './json-bounds.js';
import { NodeStatus, NodeType } from './nodes.js';

/*
 * WebSocket messages of spec 6.2: JSON objects selected by `type`. JSON-RPC tool calls share the
 * node sockets but carry no `type`; their schemas are in `json-rpc.ts`.
 */

/** JSON object of names to values, as workflows and task results carry them. */
const JsonObject = boundedJson(z.record(z.string(), z.unknown()), WS_JSON_BOUNDS);

// --- node (extension, desktop) to server ---

/** Sent by a node right after connecting; the server answers {@link RegisteredMessage}. */
/**
 * A richer tool description a node may send in `register` (beyond the spec, which only has
 * `available_tools` names): lets the agent offer the model a real description and argument
 * schema. `writes` marks tools that change something, which `ask` and `plan` modes withhold.
 */
export const NodeToolDescriptor = z.object({
  name: z.string().min(1),
  description: z.string().optional(),
  /** JSON Schema of the arguments object. */
  inputSchema: boundedJson(z.record(z.string(), z.unknown()), WS_JSON_BOUNDS).optional(),
  /** @default true: a node tool is assumed to write unless it says otherwise. */
  writes: z.boolean().default(true),
});
export type NodeToolDescriptor = z.infer<typeof NodeToolDescriptor>;

export const RegisterMessage = z.object({
  type: z.literal('register'),
  node_id: z.string().min(1),
  /** @default 'Unknown Node' */
  node_name: z.string().default('Unknown Node'),
  node_type: NodeType,
  os: z.string().optional(),
  os_version: z.string().optional(),
  app_version: z.string().optional(),
  /** @default [] */
  capabilities: z.array(z.string()).default([]),
  /** Names of the tools the node can run. @default [] */
  available_tools: z.array(z.string()).default([]),
  /** @default 3 */
  max_concurrent_tasks: z.number().int().positive().default(3),
  /** Beyond the spec: descriptors of `available_tools` (a name listed only here is added to them). */
  tools: z.array(NodeToolDescriptor).max(256).optional(),
});
export type RegisterMessage = z.infer<typeof RegisterMessage>;
export type RegisterMessageInput = z.input<typeof RegisterMessage>;

/** Keepalive and state update (spec 3.1); the server answers {@link HeartbeatAckMessage}. */
export const HeartbeatMessage = z.object({
  type: z.literal('heartbeat'),
  /** @default 'online' */
  status: NodeStatus.default('online'),
  /** @default 0 */
  current_tasks: z.number().int().nonnegative().default(0),
});
export type HeartbeatMessage = z.infer<typeof HeartbeatMessage>;
export type HeartbeatMessageInput = z.input<typeof HeartbeatMessage>;

/**
 * A well-formed heartbeat checked by hand, as {@link HeartbeatMessage} would parse it (defaults
 * applied, unknown keys left out); undefined for anything else, which then goes to the schema
 * (and its error messages). The most frequent frame of an idle node: a schema parse of each was
 * a measurable share of an idle gateway's time.
 */
export function heartbeatOf(frame: Record<string, unknown>): HeartbeatMessage | undefined {
  const { type, status = 'online', current_tasks: tasks = 0 } = frame;
  if (type !== 'heartbeat' || (status !== 'online' && status !== 'busy' && status !== 'offline'))
    return undefined;
  if (!Number.isSafeInteger(tasks) || (tasks as number) < 0) return undefined;
  return { type, status, current_tasks: tasks as number };
}

/** Keepalive from any client; from a node it also counts as a heartbeat. Answered by `pong`. */
export const PingMessage = z.object({
  type: z.literal('ping'),
});
export type PingMessage = z.infer<typeof PingMessage>;

/** Status update. The spec types it as a plain string and defines no reply. */
export const StatusMessage = z.object({
  type: z.literal('status'),
  status: z.string(),
});
export type StatusMessage = z.infer<typeof StatusMessage>;

/**
 * Legacy tool response, deprecated in favour of JSON-RPC 2.0 and kept for old nodes. Lenient on
 * purpose: `result` and `error` may be absent or null, and `error` a string or an object.
 */
export const McpResponseMessage = z.object({
  type: z.literal('mcp_response'),
  request_id: z.string().min(1),
  /** @default null */
  result: JsonObject.nullable().default(null),
  /** @default null */
  error: z.union([z.string(), JsonObject]).nullable().default(null),
});
export type McpResponseMessage = z.infer<typeof McpResponseMessage>;

/**
 * The extension finished a workflow run; the server relays it to the user's web clients as
 * {@link WorkflowCompleteMessage}. `success` and `error` are not in the spec: a node may report a
 * failed run with `success: false`; when `success` is absent the run counts as successful.
 */
export const TaskCompleteMessage = z.object({
  type: z.literal('task_complete'),
  task_id: z.string().min(1),
  /** @default {} */
  result: JsonObject.default({}),
  /** @default '' */
  output: z.string().default(''),
  success: z.boolean().optional(),
  error: z.string().optional(),
});
export type TaskCompleteMessage = z.infer<typeof TaskCompleteMessage>;
export type TaskCompleteMessageInput = z.input<typeof TaskCompleteMessage>;

// --- both directions ---

/**
 * The list of workflows. The extension sends it in answer to a relayed `get_workflows`, and the
 * server relays it to the web clients unchanged; the server also sends it itself with
 * `success: false` and `error: 'Extension not connected'` when no extension is connected.
 * Workflows are the extension's own objects: kept whole, not validated.
 */
export const WorkflowsListMessage = z.object({
  type: z.literal('workflows_list'),
  success: z.boolean(),
  error: z.string().optional(),
  workflows: boundedJson(z.array(z.looseObject({})), WS_JSON_BOUNDS).optional(),
});
export type WorkflowsListMessage = z.infer<typeof WorkflowsListMessage>;

/**
 * Asks for the workflows of the user's browser extension. Sent by a web client, and relayed
 * unchanged by the server to the extension.
 */
export const GetWorkflowsMessage = z.object({
  type: z.literal('get_workflows'),
});
export type GetWorkflowsMessage = z.infer<typeof GetWorkflowsMessage>;

/**
 * Starts a workflow on the user's browser extension. Sent by a web client without `task_id`;
 * the server relays it to the extension with a `task_id` of its own, which comes back in
 * `task_complete` and `workflow_complete`.
 */
export const ExecuteWorkflowMessage = z.object({
  type: z.literal('execute_workflow'),
  workflow_id: z.string().min(1),
  /** Workflow variables, name to value. @default {} */
  variables: JsonObject.default({}),
  task_id: z.string().min(1).optional(),
});
export type ExecuteWorkflowMessage = z.infer<typeof ExecuteWorkflowMessage>;
export type ExecuteWorkflowMessageInput = z.input<typeof ExecuteWorkflowMessage>;

// --- server to client ---

/** Answer to `register`. */
export const RegisteredMessage = z.object({
  type: z.literal('registered'),
  node_id: z.string(),
  success: z.boolean(),
});
export type RegisteredMessage = z.infer<typeof RegisteredMessage>;

/** Answer to `heartbeat`. */
export const HeartbeatAckMessage = z.object({
  type: z.literal('heartbeat_ack'),
});
export type HeartbeatAckMessage = z.infer<typeof HeartbeatAckMessage>;

/** Answer to `ping`. */
export const PongMessage = z.object({
  type: z.literal('pong'),
});
export type PongMessage = z.infer<typeof PongMessage>;

/**
 * Acknowledges `execute_workflow` to the web client. `task_id` is not in the spec; it is the id
 * the later `workflow_complete` carries, so a client running several workflows can pair them.
 */
export const WorkflowStartedMessage = z.object({
  type: z.literal('workflow_started'),
  workflow_id: z.string(),
  task_id: z.string().optional(),
});
export type WorkflowStartedMessage = z.infer<typeof WorkflowStartedMessage>;

/**
 * A workflow run ended. `error` is not in the spec: it explains `success: false`, e.g. when the
 * run timed out or the extension reported a failure.
 */
export const WorkflowCompleteMessage = z.object({
  type: z.literal('workflow_complete'),
  task_id: z.string(),
  success: z.boolean(),
  /** @default {} */
  result: JsonObject.default({}),
  /** @default '' */
  output: z.string().default(''),
  error: z.string().optional(),
});
export type WorkflowCompleteMessage = z.infer<typeof WorkflowCompleteMessage>;

/**
 * The service's answer to a frame it cannot accept (not JSON, unknown `type`, invalid fields, not
 * allowed from this kind of client). Not in the spec. The connection stays open; close codes are
 * kept for fatal cases.
 */
export const WsErrorMessage = z.object({
  type: z.literal('error'),
  code: z.string().min(1),
  message: z.string(),
});
export type WsErrorMessage = z.infer<typeof WsErrorMessage>;

/**
 * A scheduled task with `run_mode` `require-confirmation` is due: the web client asks the user and
 * answers with `POST /scheduled-task/confirm` (`task_id`, `scheduled_at`, `confirm`). Not in the
 * spec. `expires_at`: after it the occurrence is skipped.
 */
export const ScheduledTaskConfirmationMessage = z.object({
  type: z.literal('scheduled_task_confirmation'),
  task_id: z.string(),
  /** The occurrence instant, ISO 8601 UTC; with `task_id` it names the occurrence. */
  scheduled_at: z.string(),
  title: z.string(),
  prompt: z.string(),
  expires_at: z.string(),
});
export type ScheduledTaskConfirmationMessage = z.infer<typeof ScheduledTaskConfirmationMessage>;

/** A scheduled task's occurrence finished (or was skipped); the agent's answer is `output`. */
export const ScheduledTaskResultMessage = z.object({
  type: z.literal('scheduled_task_result'),
  task_id: z.string(),
  scheduled_at: z.string(),
  title: z.string(),
  success: z.boolean(),
  /** @default '' */
  output: z.string().default(''),
  error: z.string().optional(),
});
export type ScheduledTaskResultMessage = z.infer<typeof ScheduledTaskResultMessage>;

/**
 * Beyond the wire contract's message list: a web client that sends `watch_nodes` is told when one
 * of its user's nodes connects or disconnects, on any replica (`node_status`), so a node list can
 * stay live without polling. Web clients that do not send it never receive `node_status`.
 */
export const WatchNodesMessage = z.object({
  type: z.literal('watch_nodes'),
});
export type WatchNodesMessage = z.infer<typeof WatchNodesMessage>;

/**
 * A node of the user connected (`online`, once registered) or disconnected (`offline`). A hint to
 * read `GET /node/devices` again, which stays the truth: two replicas' events for one node that
 * reconnected may arrive in either order.
 */
export const NodeStatusMessage = z.object({
  type: z.literal('node_status'),
  node_type: NodeType,
  node_id: z.string(),
  status: NodeStatus,
});
export type NodeStatusMessage = z.infer<typeof NodeStatusMessage>;

// --- unions by sender ---

/** What an extension or desktop may send, apart from JSON-RPC responses. */
export const NodeClientMessage = z.discriminatedUnion('type', [
  RegisterMessage,
  HeartbeatMessage,
  PingMessage,
  StatusMessage,
  McpResponseMessage,
  TaskCompleteMessage,
  WorkflowsListMessage,
]);
export type NodeClientMessage = z.infer<typeof NodeClientMessage>;
export type NodeClientMessageInput = z.input<typeof NodeClientMessage>;

/** What a web client may send. */
export const WebClientMessage = z.discriminatedUnion('type', [
  PingMessage,
  GetWorkflowsMessage,
  ExecuteWorkflowMessage,
  StatusMessage,
  HeartbeatMessage,
  WatchNodesMessage,
]);
export type WebClientMessage = z.infer<typeof WebClientMessage>;
export type WebClientMessageInput = z.input<typeof WebClientMessage>;

/**
 * What the server sends on any socket: replies, web-client notifications, and the
 * `get_workflows` / `execute_workflow` relays to an extension. JSON-RPC tool calls are separate.
 */
export const ServerMessage = z.discriminatedUnion('type', [
  RegisteredMessage,
  HeartbeatAckMessage,
  PongMessage,
  WorkflowsListMessage,
  WorkflowStartedMessage,
  WorkflowCompleteMessage,
  GetWorkflowsMessage,
  ExecuteWorkflowMessage,
  WsErrorMessage,
  ScheduledTaskConfirmationMessage,
  ScheduledTaskResultMessage,
  NodeStatusMessage,
]);
export type ServerMessage = z.infer<typeof ServerMessage>;
export type ServerMessageInput = z.input<typeof ServerMessage>;
