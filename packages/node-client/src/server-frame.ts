import { fieldErrors, ServerMessage, type WsErrorMessage } from '@agent-backend/protocol';
import { ClientError } from './errors.js';

/**
 * The server message a parsed frame holds, or the `protocol_error` to report when it matches
 * none: both clients drop such a frame and go on, since one bad frame should not end a session.
 */
export function serverMessageOf(frame: unknown): ServerMessage | ClientError {
  const parsed = ServerMessage.safeParse(frame);
  if (parsed.success) return parsed.data;
  return new ClientError('protocol_error', 'dropped a frame that matches no server message', {
    problems: fieldErrors(parsed.error),
  });
}

/** The client error for a server's `error` message, keeping the server's code for callers. */
export function serverError(message: WsErrorMessage): ClientError {
  return new ClientError('server_error', `server error ${message.code}: ${message.message}`, {
    serverCode: message.code,
  });
}
