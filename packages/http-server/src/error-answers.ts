import type { Duplex } from 'node:stream';
import type { Request, Response } from 'express';
import type { Logger } from '@agent-backend/logger';
import { isDependencyUnavailable } from '@agent-backend/protocol';
import { drainRejectedBody } from './body-reader.js';
import { AppError, ERROR_STATUS, type ErrorCode } from './errors.js';

/** The `{ error: { code, message, details? } }` body of every error answer. */
export function errorBody(code: string, message: string, details?: unknown) {
  return { error: { code, message, ...(details !== undefined ? { details } : {}) } };
}

/**
 * Writes a JSON answer directly (Express's `res.json` → `res.send` re-derives the content type,
 * charset and freshness on every call, a sixth of the HTTP layer's CPU per request).
 */
export function sendJson(res: Response, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.statusCode = status;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.setHeader('content-length', Buffer.byteLength(body));
  res.end(body);
}

/** The JSON 404 of a request that nothing answered. */
export function sendNotFound(req: Request, res: Response): void {
  const path = req.originalUrl.split('?')[0];
  sendJson(res, 404, errorBody('not_found', `no route for ${req.method} ${path}`));
}

/**
 * Answers `error` in the service's shape: an {@link AppError} with its status, code and headers,
 * Express's own client errors as 400, an unavailable database or Redis as 503, anything else as
 * a logged 500. After the answer started, the connection is cut instead.
 */
export function sendError(error: unknown, req: Request, res: Response): void {
  if (res.headersSent) {
    req.log.error({ err: error }, 'error after the answer started');
    res.destroy();
    return;
  }
  if (error instanceof AppError) {
    if (error.code === 'payload_too_large') drainRejectedBody(req, res);
    if (error.headers) res.set(error.headers);
    sendJson(res, error.status, errorBody(error.code, error.message, error.details));
    return;
  }
  const mapped = mapFrameworkError(error as FrameworkError);
  if (mapped) {
    sendJson(res, ERROR_STATUS[mapped.code], errorBody(mapped.code, mapped.message));
    return;
  }
  if (isDependencyUnavailable(error)) {
    req.log.warn({ err: error }, 'a dependency is unavailable');
    sendJson(
      res,
      ERROR_STATUS.unavailable,
      errorBody('unavailable', 'the database or Redis is unavailable; retry shortly'),
    );
    return;
  }
  req.log.error({ err: error }, 'unhandled error');
  sendJson(res, 500, errorBody('internal_error', 'internal server error'));
}

/**
 * Answers a request the HTTP parser refused (headers too large, malformed, timed out) on its
 * socket, in the same shape: such requests never reach Express.
 */
export function answerClientError(
  error: NodeJS.ErrnoException,
  socket: Duplex,
  logger: Logger,
): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const [status, reason, code, message] = clientErrorAnswer(error.code);
  const body = JSON.stringify(errorBody(code, message));
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  logger.info({ status, code: error.code }, 'request refused by the HTTP parser');
}

/** What Express throws (http-errors: `status`). */
interface FrameworkError extends Error {
  status?: number;
  statusCode?: number;
}

/** Express's own client errors in our error shape. */
function mapFrameworkError(
  error: FrameworkError,
): { code: ErrorCode; message: string } | undefined {
  // The router decodes path parameters with decodeURIComponent.
  if (error instanceof URIError) {
    return { code: 'invalid_url', message: 'the request path has a malformed percent-encoding' };
  }
  const status = error.status ?? error.statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    return { code: 'invalid_request', message: error.message };
  }
  return undefined;
}

/** The answer to a request the HTTP parser refused: status line parts, code, message. */
function clientErrorAnswer(code: string | undefined): [number, string, ErrorCode, string] {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return [
        431,
        'Request Header Fields Too Large',
        'headers_too_large',
        'the request line and headers are larger than the server accepts (16 KiB)',
      ];
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'ERR_HTTP_HEADERS_TIMEOUT':
      return [408, 'Request Timeout', 'request_timeout', 'the request was not received in time'];
    default:
      return [400, 'Bad Request', 'invalid_request', 'the request is not valid HTTP/1.1'];
  }
}
