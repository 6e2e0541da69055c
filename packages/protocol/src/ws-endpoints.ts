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
