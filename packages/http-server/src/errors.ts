/**
 * The one registry of error codes the HTTP API answers with, and their status. Every error body
 * is `{ error: { code, message, details? } }` except where the specification fixes another shape
 * (refresh: `{ error }`, MCP validation timeout: `{ detail }`); those routes reply themselves.
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  invalid_json: 400,
  /** A path with a malformed percent-encoding (`%E0%A4%A`). */
  invalid_url: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  node_not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  /** HITL: the decision is not in the tool's `allowed_decisions`. */
  decision_not_allowed: 400,
  /** HITL: the approval already has an outcome (a decision, its timeout, or a stopped run). */
  approval_closed: 409,
  /** HITL: the replica holding the approval's stream is gone; the call will never run. */
  approval_orphaned: 409,
  session_busy: 409,
  /** Invoke: `session_id` names one of the service's own sessions (`chat:`, `task:` prefixes). */
  session_id_reserved: 400,
  /** A token would be issued for a user id the service keeps for itself (`chat:`, `task:` prefixes). */
  user_id_reserved: 400,
  /** `DELETE /api/me`: the body's `confirm` is missing or is not the caller's user id. */
  confirmation_required: 400,
  request_timeout: 408,
  payload_too_large: 413,
  unsupported_media_type: 415,
  /** The request line and headers exceed the HTTP parser's limit (16 KiB). */
  headers_too_large: 431,
  rate_limited: 429,
  /** The user's daily model token budget (`TOKEN_BUDGET_PER_USER_PER_DAY`) is used up. */
  budget_exceeded: 429,
  internal_error: 500,
  node_disconnected: 502,
  not_configured: 503,
  unavailable: 503,
  node_timeout: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** An error that becomes a response with a stable code, a status and a safe message. */
export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'AppError';
    this.status = ERROR_STATUS[code];
  }
}
