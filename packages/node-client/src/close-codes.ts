import { WS_CLOSE } from '@agent-backend/protocol';
import type { ClientErrorCode } from './errors.js';

/**
 * WebSocket close codes the gateway uses. 4001 is the spec's (missing identity); the others
 * are the service's own (docs/gateway.md), in the application range 4000-4999 so a client can tell them from
 * network failures (1006) and server restarts (1001).
 */
export const CloseCode = {
  Normal: 1000,
  GoingAway: WS_CLOSE.goingAway,
  Abnormal: 1006,
  MessageTooBig: WS_CLOSE.tooBig,
  MissingIdentity: WS_CLOSE.missingIdentity,
  InvalidIdentity: WS_CLOSE.invalidIdentity,
  SlowConsumer: WS_CLOSE.slowConsumer,
  Replaced: WS_CLOSE.replaced,
  Stale: WS_CLOSE.stale,
  Unauthorized: WS_CLOSE.unauthorized,
  Forbidden: WS_CLOSE.forbidden,
} as const;

/**
 * What a client does after its socket ended:
 * - `reconnect`: wait a backoff delay and connect again (network failures, restarts, 4008,
 *   1009, 4011, any code not listed below). 4011 (stale) closes a socket a later attempt of
 *   this client superseded, which the client has normally abandoned already; on its current
 *   socket, a new attempt (with a higher sequence) is what it needs;
 * - `refresh_token`: ask `getToken()` for a fresh token and reconnect once; stop with
 *   `unauthorized` when there is no `getToken()` or the fresh token is refused too;
 * - `stop`: final, with the error code to report.
 */
export type CloseAction =
  | { readonly action: 'reconnect' }
  | { readonly action: 'refresh_token' }
  | { readonly action: 'stop'; readonly code: ClientErrorCode; readonly message: string };

const RECONNECT: CloseAction = { action: 'reconnect' };
const REFRESH: CloseAction = { action: 'refresh_token' };

/** The action for a close code received after the WebSocket opened. */
export function closeAction(code: number): CloseAction {
  switch (code) {
    case CloseCode.Unauthorized:
      return REFRESH;
    case CloseCode.Forbidden:
      return {
        action: 'stop',
        code: 'forbidden',
        message: 'the server refused this user or origin (close 4403)',
      };
    case CloseCode.MissingIdentity:
      return {
        action: 'stop',
        code: 'missing_identity',
        message: 'the server saw no client_id / user_id (close 4001)',
      };
    case CloseCode.InvalidIdentity:
      return {
        action: 'stop',
        code: 'invalid_identity',
        message: 'the server refused the client_id / node_id of the URL (close 4002)',
      };
    case CloseCode.Replaced:
      return {
        action: 'stop',
        code: 'replaced',
        message: 'a newer connection of this node replaced this one (close 4009)',
      };
    default:
      return RECONNECT;
  }
}

/**
 * The action for an HTTP answer to the upgrade request other than 101, for servers or proxies
 * that refuse before accepting: 401 and 403 as their close codes; anything else (404 or 502
 * during a deploy, 503 while starting) is retried with backoff.
 */
export function handshakeAction(status: number): CloseAction {
  if (status === 401) return REFRESH;
  if (status === 403)
    return { action: 'stop', code: 'forbidden', message: 'the server refused the upgrade (403)' };
  return RECONNECT;
}
