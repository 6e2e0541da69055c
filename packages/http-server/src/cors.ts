import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * Request headers a cross-origin page may send: the bearer token, JSON bodies, the SSE resume
 * point (`Last-Event-ID`, which `EventSource` and the SDK send), the caller's request id and a
 * W3C trace context.
 */
export const CORS_ALLOWED_HEADERS = [
  'Authorization',
  'Content-Type',
  'Last-Event-ID',
  'X-Request-Id',
  'traceparent',
  'tracestate',
] as const;

/**
 * Response headers a cross-origin page may read beyond the CORS-safelisted ones: the request id
 * (to report a failure), the rate limit's state and when to retry.
 */
export const CORS_EXPOSED_HEADERS = [
  'X-Request-Id',
  'Retry-After',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'X-RateLimit-Used',
  'X-RateLimit-Resource',
] as const;

const ALLOWED_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE';
/** How long a browser may reuse a preflight's answer (seconds); browsers cap it lower anyway. */
const PREFLIGHT_MAX_AGE = '600';

/**
 * CORS for the origins listed, exactly as written (scheme, host and port): the answer to a
 * request carrying one of them names it in `Access-Control-Allow-Origin`; a preflight from one
 * of them is answered here (204) with the methods and {@link CORS_ALLOWED_HEADERS}. No
 * credentials mode: the API authenticates with a bearer token, never a cookie. A request from
 * any other origin gets no CORS header at all (the browser then refuses the page the answer),
 * and its preflight goes on to the routes like any `OPTIONS` (the JSON 404).
 *
 * Returns `true` when it answered the request (a preflight).
 */
export function applyCors(
  allowed: ReadonlySet<string>,
  req: IncomingMessage,
  res: ServerResponse,
): boolean {
  // The answer differs by Origin: a cache must not hand one origin's answer to another.
  res.setHeader('vary', 'Origin');
  const origin = req.headers.origin;
  if (origin === undefined || !allowed.has(origin)) return false;
  res.setHeader('access-control-allow-origin', origin);
  if (req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined) {
    res.setHeader('access-control-allow-methods', ALLOWED_METHODS);
    res.setHeader('access-control-allow-headers', CORS_ALLOWED_HEADERS.join(', '));
    res.setHeader('access-control-max-age', PREFLIGHT_MAX_AGE);
    res.setHeader('content-length', '0');
    res.statusCode = 204;
    res.end();
    return true;
  }
  res.setHeader('access-control-expose-headers', CORS_EXPOSED_HEADERS.join(', '));
  return false;
}
