import type { ServerMessage } from '@agent-backend/protocol';
import type { ClientError } from './errors.js';
import type { DisconnectInfo } from './reconnecting-socket.js';

/** The events of a gateway connection, which both clients emit alike. */
export interface ConnectionEvents {
  connecting: { readonly attempt: number; readonly url: string };
  /** The socket opened (the token is redacted from `url`). */
  connected: { readonly url: string };
  disconnected: DisconnectInfo;
  /** The client will not connect again; `error.code` is `closed` after `close()`. */
  stopped: { readonly error: ClientError };
  error: ClientError;
  /** Every valid typed frame from the server. */
  message: ServerMessage;
}
