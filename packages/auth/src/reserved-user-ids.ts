/**
 * User ids the service uses for itself, which no token may carry as its subject. A chat on a chat
 * platform owns its conversation and memories as the user `chat:<platform>:<chat_id>`, and the
 * scheduled runs' sessions are `task:...`; a token whose subject were such an id would read and
 * write that chat's sessions and memories. Refused when a token is issued (`pnpm token:issue`,
 * the token endpoints, refresh tokens) and when one is verified (the service's tokens and the
 * identity provider's). The prefixes are those of agent-runtime's `RESERVED_SESSION_ID_PREFIXES`
 * (a test keeps the two lists equal; auth does not depend on the agent runtime).
 */
export const RESERVED_USER_ID_PREFIXES = ['chat:', 'task:'] as const;

/** Whether `userId` is one the service keeps for itself (exact, case-sensitive prefix match). */
export function isReservedUserId(userId: string): boolean {
  return RESERVED_USER_ID_PREFIXES.some((prefix) => userId.startsWith(prefix));
}

/** Thrown when a token would be issued for a reserved user id; the message is safe to return. */
export class ReservedUserIdError extends Error {
  /** The stable error code an HTTP answer uses (400). */
  readonly code = 'user_id_reserved';
  constructor(readonly userId: string) {
    super(
      `user id "${userId}" is reserved for the service's own use (ids starting with ${RESERVED_USER_ID_PREFIXES.map((p) => `"${p}"`).join(' or ')}); no token can be issued for it`,
    );
    this.name = 'ReservedUserIdError';
  }
}

/** Throws {@link ReservedUserIdError} when `userId` is reserved; call before issuing any token. */
export function assertUserIdAllowed(userId: string): void {
  if (isReservedUserId(userId)) throw new ReservedUserIdError(userId);
}
