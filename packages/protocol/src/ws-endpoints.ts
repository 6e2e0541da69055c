/** WebSocket paths of the gateway (spec 4.3), one per kind of client. */
export const WS_PATHS = {
  extension: '/ws/extension',
  desktop: '/ws/desktop',
  web: '/ws/web',
} as const;
export type WsClientKind = keyof typeof WS_PATHS;

/**
 * Close code when the connection names no identity: `client_id` missing on the extension and
 * desktop paths, `user_id` on the web path (spec 7). Application range (4000-4999), so clients
 * can tell it from a network failure and stop reconnecting.
 */
export const WS_CLOSE_MISSING_IDENTITY = 4001;

/**
 * Every close code the gateway uses (docs/gateway.md). 4xxx codes are permanent for the same
 * request: a client should not reconnect unchanged (except 4401 with a fresh token, and 4008
 * after a backoff). 1001 (server going away) and network failures call for a reconnect.
 */
export const WS_CLOSE = {
  /** Spec 7: `client_id` (extension, desktop) or `user_id` (web) is missing. */
  missingIdentity: WS_CLOSE_MISSING_IDENTITY,
  /** `client_id` is not `user_<id>` on /ws/extension or `desktop_<id>` on /ws/desktop. */
  invalidIdentity: 4002,
  /**
   * The client kept sending well over its frame or byte rate, or the user already has
   * `MAX_NODE_CONNECTIONS_PER_USER` / `MAX_WEB_CONNECTIONS_PER_USER` connections open (reason
   * `too many connections`; reconnect after a backoff) (docs/limits.md).
   */
  policyViolation: 1008,
  /** The limits could not be checked (Redis down, `LIMITS_ON_REDIS_ERROR=closed`); retry shortly. */
  tryAgainLater: 1013,
  /** The client let more than the allowed unsent bytes pile up (slow consumer). */
  slowConsumer: 4008,
  /** The same node connected again; this older connection is closed. */
  replaced: 4009,
  /** No access token, or an invalid or expired one. */
  unauthorized: 4401,
  /** The token's user is not the user named in the URL, or the Origin is not allowed. */
  forbidden: 4403,
  /** A frame larger than the limit (RFC 6455 "message too big"). */
  tooBig: 1009,
  /** The server is shutting down; reconnect (to another replica). */
  goingAway: 1001,
  /** The operator disconnected the user (operator API); a client reconnects with backoff. */
  operatorDisconnect: 4010,
  /**
   * A connection that names its order (`instance_id`, `connection_seq`) is older than the one
   * the node already has from the same client instance: the client has moved on to the newer
   * one, so this one is refused. A client reconnects only if this was its current socket.
   */
  stale: 4011,
} as const;
