/**
 * Stable codes of {@link ClientError}, so callers branch on a code instead of a message.
 *
 * - `unauthorized`: the server refused the token (close 4401 or HTTP 401) and no fresh one was
 *   available. Final.
 * - `forbidden`: the token's user is not the user of the URL, or the Origin is not allowed
 *   (close 4403 or HTTP 403). Final.
 * - `missing_identity`: the server saw no `client_id` / `user_id` (close 4001). Final.
 * - `invalid_identity`: the server refused the form of `client_id` or `node_id` (close 4002).
 *   Final.
 * - `replaced`: a newer connection of the same node took over (close 4009). Final, so two
 *   processes sharing a node id do not knock each other off forever.
 * - `token_unavailable`: `getToken()` threw; the client retries with backoff.
 * - `registration_failed`: the server answered `registered` with `success: false`.
 * - `protocol_error`: an inbound frame was not JSON or matched no schema; it was dropped.
 * - `server_error`: the server answered a frame with an `error` message.
 * - `invalid_argument`: a request was built from values the protocol schemas refuse.
 * - `not_connected`: a request was made while the socket is not open.
 * - `disconnected`: the socket dropped while a request waited for its answer.
 * - `timeout`: a request got no answer within its deadline.
 * - `closed`: `close()` was called.
 */
export type ClientErrorCode =
  | 'unauthorized'
  | 'forbidden'
  | 'missing_identity'
  | 'invalid_identity'
  | 'replaced'
  | 'token_unavailable'
  | 'registration_failed'
  | 'protocol_error'
  | 'server_error'
  | 'invalid_argument'
  | 'not_connected'
  | 'disconnected'
  | 'timeout'
  | 'closed';

/**
 * Every error the clients emit or reject with. Messages never contain the token: URLs in them
 * are redacted and server error bodies are passed through only as the server wrote them.
 */
export class ClientError extends Error {
  constructor(
    readonly code: ClientErrorCode,
    message: string,
    /** Extra facts for logs: the close code, the server's error `code`, a schema path. */
    readonly details?: Readonly<Record<string, unknown>>,
  ) {
    super(message);
    this.name = 'ClientError';
  }
}
