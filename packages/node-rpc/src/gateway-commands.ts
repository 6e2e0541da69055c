import { z } from 'zod';
import { RawJson } from '@agent-backend/bus';
import { ConnectionOrder, ToolCallRequest } from '@agent-backend/protocol';

/**
 * What crosses the bus between any process and the gateway replica holding a connection.
 * Every gateway replica answers requests on its own channel, so a caller that found a node in
 * presence addresses the replica that holds it; a replica that is gone answers nobody, which
 * the bus reports at once.
 */
export const gatewayChannel = (replicaId: string): string => `gateway:${replicaId}`;

/** Every web connection of a user, on every replica, listens here (spec 4.3 rule 2). */
export const userWebChannel = (userId: string): string => `web:${userId}`;

/**
 * Every gateway replica listens here for the operator's "disconnect this user" (a
 * `DisconnectUserMessage`) and closes the user's sockets it holds with 4010.
 */
export const DISCONNECT_USER_CHANNEL = 'operator:disconnect-user';

/** Send a JSON-RPC `tools/call` to a node and wait for its response. */
export const ToolCallCommand = z.object({
  kind: z.literal('tool_call'),
  userId: z.string().min(1),
  nodeId: z.string().min(1),
  request: ToolCallRequest,
  timeoutMs: z.number().int().positive(),
  /**
   * Set by a caller that routed the call on a cached route: a replica that does not hold the
   * node answers {@link ToolCallNotHere} instead of the `node_not_found` error, and the caller
   * retries once on a fresh presence read. A replica that predates it drops the field and
   * answers `node_not_found`, which such a caller retries the same way; a caller that does not
   * set it gets `node_not_found`, as before.
   */
  notHereOk: z.literal(true).optional(),
});
export type ToolCallCommand = z.infer<typeof ToolCallCommand>;

/** Send one message to a node without waiting for an answer (workflow relays). */
export const DeliverCommand = z.object({
  kind: z.literal('deliver'),
  userId: z.string().min(1),
  nodeId: z.string().min(1),
  message: z.record(z.string(), z.unknown()),
});
export type DeliverCommand = z.infer<typeof DeliverCommand>;

/** A node connected again elsewhere: close the older connection here (4009). */
export const ReplaceCommand = z.object({
  kind: z.literal('replace'),
  userId: z.string().min(1),
  nodeId: z.string().min(1),
  /** The replica that holds the newer connection. */
  byReplica: z.string().min(1),
  /**
   * The newer connection's order, when its client named one: a connection held here that is a
   * later one of the same client instance is kept (the command comes from a stale socket
   * processed late). A replica that predates the field drops it and closes, as before.
   */
  connection: ConnectionOrder.optional(),
});
export type ReplaceCommand = z.infer<typeof ReplaceCommand>;

export const GatewayCommand = z.discriminatedUnion('kind', [
  ToolCallCommand,
  DeliverCommand,
  ReplaceCommand,
]);
export type GatewayCommand = z.infer<typeof GatewayCommand>;

/**
 * A well-formed {@link ToolCallCommand}, checked by hand, with what the schema would return
 * (unknown keys left out, `arguments` defaulting to `{}`); undefined for anything else, which
 * the caller then parses with {@link GatewayCommand} (so a bad command is refused exactly as
 * before). Every tool call crosses the bus as one: a schema parse of each was a measurable share
 * of a gateway's time under load.
 */
export function toolCallCommandOf(raw: unknown): ToolCallCommand | undefined {
  if (!isObject(raw) || raw.kind !== 'tool_call') return undefined;
  const { userId, nodeId, request, timeoutMs, notHereOk } = raw;
  if (!isId(userId) || !isId(nodeId) || !isObject(request)) return undefined;
  if (!Number.isSafeInteger(timeoutMs) || (timeoutMs as number) <= 0) return undefined;
  if (notHereOk !== undefined && notHereOk !== true) return undefined;
  const { jsonrpc, id, method, params } = request;
  if (jsonrpc !== '2.0' || !isId(id) || method !== 'tools/call' || !isObject(params)) {
    return undefined;
  }
  const { name, arguments: args = {}, session_id: sessionId } = params;
  if (!isId(name) || !isObject(args) || Object.getPrototypeOf(args) !== Object.prototype) {
    return undefined;
  }
  if (sessionId !== undefined && typeof sessionId !== 'string') return undefined;
  return {
    kind: 'tool_call',
    userId,
    nodeId,
    request: {
      jsonrpc,
      id,
      method,
      params: {
        name,
        arguments: args as Record<string, unknown>,
        ...(sessionId === undefined ? {} : { session_id: sessionId }),
      },
    },
    timeoutMs: timeoutMs as number,
    ...(notHereOk ? { notHereOk } : {}),
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isId(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}

/**
 * The gateway's answer to a {@link ToolCallCommand}: the node's JSON-RPC response, unvalidated
 * (the caller validates it).
 */
export const ToolCallReply = z.object({ response: z.unknown() });
export type ToolCallReply = z.infer<typeof ToolCallReply>;

/**
 * The {@link ToolCallReply} carrying `response`: a response frame's JSON text as the node sent
 * it (which the gateway parsed, so it is one JSON value) is embedded in the reply as it is, so
 * the reply is serialised once and the caller parses it once; a response object (made of a
 * legacy `mcp_response`) is serialised with the reply.
 */
export function toolCallReply(
  response: RawJson | Record<string, unknown>,
): RawJson | ToolCallReply {
  return response instanceof RawJson ? new RawJson(`{"response":${response.text}}`) : { response };
}

/**
 * The answer of a replica that does not hold the node to a {@link ToolCallCommand} with
 * `notHereOk`: nothing was sent to the node, so the caller may route the call again.
 */
export const ToolCallNotHere = z.object({ notHere: z.literal(true) });
export type ToolCallNotHere = z.infer<typeof ToolCallNotHere>;

/**
 * Every gateway replica publishes here when a node entry it owns changes in presence (connected,
 * re-registered, status changed, disconnected: `node`; not a change of its tasks alone) and when
 * it leaves (`replica_gone`), so callers that cache routes drop them. One broadcast channel:
 * each API replica receives every change (a few dozen small messages a second at 100,000
 * nodes reconnecting once an hour) instead of holding one subscription per user it has called.
 * Best effort: a lost change is bounded by the caller's route age.
 */
export const PRESENCE_CHANGES_CHANNEL = 'presence:changes';

export const PresenceChange = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('node'), userId: z.string(), nodeId: z.string() }),
  z.object({ kind: z.literal('replica_gone'), replicaId: z.string() }),
]);
export type PresenceChange = z.infer<typeof PresenceChange>;

/**
 * Error codes a gateway replica answers commands with (carried as the bus error's `code`).
 * The caller turns them into `NodeCallError`s.
 */
export const GATEWAY_ERROR = {
  nodeNotFound: 'node_not_found',
  nodeDisconnected: 'node_disconnected',
  timeout: 'timeout',
  invalidCommand: 'invalid_command',
} as const;

/** An error whose `code` the bus carries to the caller. */
export class GatewayCommandError extends Error {
  constructor(
    readonly code: (typeof GATEWAY_ERROR)[keyof typeof GATEWAY_ERROR],
    message: string,
  ) {
    super(message);
    this.name = 'GatewayCommandError';
  }
}
