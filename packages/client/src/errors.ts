import { retryAfterMs } from './retry.js';

/** An answer of the service that is not a success, with its documented error body. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** The request was refused as written (400, 413, 415, 431): fix it, do not retry it. */
export class ValidationError extends ApiError {
  override name = 'ValidationError';
}
/** No valid access token (401): refresh it (`onUnauthorized`). */
export class UnauthorizedError extends ApiError {
  override name = 'UnauthorizedError';
}
/** The token's user may not do this (403). */
export class ForbiddenError extends ApiError {
  override name = 'ForbiddenError';
}
/** No such resource of this user (404): `not_found`, `node_not_found`. */
export class NotFoundError extends ApiError {
  override name = 'NotFoundError';
}
/** The resource's state refuses it (409): `session_busy`, `approval_closed`, `conflict`... */
export class ConflictError extends ApiError {
  override name = 'ConflictError';
}
/** Too many requests (429); `retryAfterMs` from `Retry-After` when the service sent it. */
export class RateLimitedError extends ApiError {
  override name = 'RateLimitedError';
  retryAfterMs: number | undefined;
}
/** The service cannot answer now (503 `unavailable`, `not_configured`; 500 `internal_error`). */
export class ServiceUnavailableError extends ApiError {
  override name = 'ServiceUnavailableError';
}
/** A node did not answer a tool call (502 `node_disconnected`, 504 `node_timeout`). */
export class NodeError extends ApiError {
  override name = 'NodeError';
}

type ApiErrorClass = new (
  status: number,
  code: string,
  message: string,
  details?: unknown,
) => ApiError;

/** The class of each documented error code (docs/protocol.md, "Errors"). */
const CLASS_BY_CODE: Record<string, ApiErrorClass> = {
  invalid_request: ValidationError,
  invalid_json: ValidationError,
  invalid_url: ValidationError,
  session_id_reserved: ValidationError,
  decision_not_allowed: ValidationError,
  payload_too_large: ValidationError,
  unsupported_media_type: ValidationError,
  headers_too_large: ValidationError,
  unauthorized: UnauthorizedError,
  forbidden: ForbiddenError,
  not_found: NotFoundError,
  node_not_found: NotFoundError,
  conflict: ConflictError,
  approval_closed: ConflictError,
  approval_orphaned: ConflictError,
  session_busy: ConflictError,
  rate_limited: RateLimitedError,
  internal_error: ServiceUnavailableError,
  unavailable: ServiceUnavailableError,
  not_configured: ServiceUnavailableError,
  node_disconnected: NodeError,
  node_timeout: NodeError,
};

/** The error of `code` as its class ({@link ApiError} itself for a code not listed). */
export function errorForCode(
  status: number,
  code: string,
  message: string,
  details?: unknown,
): ApiError {
  const ErrorClass = CLASS_BY_CODE[code] ?? ApiError;
  return new ErrorClass(status, code, message, details);
}

/** The error of a failed answer, read from its body, as the class of its code. */
export async function apiError(response: Response): Promise<ApiError> {
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    body = undefined;
  }
  const error = (body as { error?: unknown } | undefined)?.error;
  let result: ApiError;
  if (error && typeof error === 'object') {
    const { code, message, details } = error as {
      code?: string;
      message?: string;
      details?: unknown;
    };
    result = errorForCode(
      response.status,
      code ?? 'unknown',
      message ?? response.statusText,
      details,
    );
  } else {
    // The refresh endpoint's body is `{ error: "<message>" }` (fixed by the spec).
    const message = typeof error === 'string' ? error : response.statusText;
    result = errorForCode(
      response.status,
      response.status === 401 ? 'unauthorized' : 'unknown',
      message,
    );
  }
  if (result instanceof RateLimitedError) {
    result.retryAfterMs = retryAfterMs(response.headers.get('retry-after'));
  }
  return result;
}

/** A call's `timeout` passed before the service answered (the request was aborted). */
export class TimeoutError extends Error {
  override name = 'TimeoutError';
  constructor(readonly timeoutMs: number) {
    super(`no answer within ${timeoutMs} ms`);
  }
}
