/**
 * Framing and routing request headers, which `fetch` forbids callers to set: the HTTP client
 * computes them itself, and one set by hand would desynchronise the message from its framing.
 * Lower case, as `Headers` and Node.js give names.
 */
export const FORBIDDEN_REQUEST_HEADERS: ReadonlySet<string> = new Set([
  'host',
  'content-length',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'expect',
]);
