import { isReservedSessionId, RESERVED_SESSION_ID_PREFIXES } from '@agent-backend/agent-runtime';
import { AppError } from '@agent-backend/http-server';

/**
 * The chats' and scheduled runs' sessions are the service's: a client names none of them, on
 * invoke or on resume (ids are per user as well, so this only matters to a token whose user id
 * is a chat's, and to a task's owner).
 */
export function refuseReservedSessionId(sessionId: string): void {
  if (!isReservedSessionId(sessionId)) return;
  const prefixes = RESERVED_SESSION_ID_PREFIXES.map((p) => `"${p}"`).join(' or ');
  throw new AppError(
    'session_id_reserved',
    `session_id must not start with ${prefixes}: those are the sessions of chats and scheduled tasks`,
  );
}
