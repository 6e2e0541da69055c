/**
 * Session ids the service names itself. A session id names a session of its owner only (the
 * store keys sessions by user and id), and on top of that a client may not name one of these:
 * an invoke with such a `session_id` is refused (400 `session_id_reserved`), so the chat's and
 * the scheduled runs' sessions are never taken, read or held busy by a client's run.
 */

/** The prefixes of the service's own session ids. */
export const RESERVED_SESSION_ID_PREFIXES = ['chat:', 'task:'] as const;

/** Whether `sessionId` is one the service keeps for itself (the comparison is exact, case included). */
export function isReservedSessionId(sessionId: string): boolean {
  return RESERVED_SESSION_ID_PREFIXES.some((prefix) => sessionId.startsWith(prefix));
}

/** The one conversation of a chat on a chat platform: `chat:<platform>:<chat_id>`. */
export function chatSessionId(platform: string, chatId: string): string {
  return `chat:${platform}:${chatId}`;
}

/**
 * The session of one attempt at one occurrence of a scheduled task:
 * `task:<task_id>:<scheduled_at ms>:<attempt>`. A new attempt starts afresh in a new session.
 */
export function scheduledRunSessionId(
  taskId: string,
  scheduledAt: number,
  attempt: number,
): string {
  return `task:${taskId}:${scheduledAt}:${attempt}`;
}
