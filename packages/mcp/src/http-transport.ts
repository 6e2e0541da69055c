import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { FORBIDDEN_REQUEST_HEADERS, type FetchLike } from '@agent-backend/url-guard';
import { McpConnectError } from './errors.js';
import { mcpSdk } from './mcp-sdk.js';

/** What the last HTTP response looked like, for error messages the SDK does not carry. */
export interface HttpTrace {
  status?: number;
  contentType?: string;
  /** Where a redirect pointed (resolved against the request URL). */
  location?: URL;
}

/** RFC 9110 token: what a header name may contain. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/**
 * Headers a user may not set: framing and routing (the client computes them) and the ones the
 * MCP transports own (overriding them would break the protocol in confusing ways).
 */
const RESERVED: ReadonlySet<string> = new Set([
  ...FORBIDDEN_REQUEST_HEADERS,
  'content-type',
  'accept',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
]);

/**
 * The headers sent with every request to the server: the custom `headers`, then `api_key` as
 * `Authorization: Bearer <api_key>` (it wins over a custom `Authorization`). Throws
 * `invalid_config` naming the header (never its value) for a bad name or value.
 */
export function buildHeaders(config: {
  api_key?: string | undefined;
  headers?: Record<string, string> | undefined;
}): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(config.headers ?? {})) {
    const lower = name.toLowerCase();
    if (!TOKEN.test(name))
      throw new McpConnectError('invalid_config', `Invalid header name "${name.slice(0, 64)}".`);
    if (RESERVED.has(lower))
      throw new McpConnectError(
        'invalid_config',
        `The header "${name}" is set by the MCP client and cannot be overridden.`,
      );
    if (/[\r\n\0]/.test(value))
      throw new McpConnectError(
        'invalid_config',
        `The value of header "${name}" contains a line break or NUL.`,
      );
    out[lower] = value;
  }
  if (config.api_key !== undefined) {
    if (/[\r\n\0]/.test(config.api_key))
      throw new McpConnectError('invalid_config', 'api_key contains a line break or NUL.');
    out.authorization = `Bearer ${config.api_key}`;
  }
  return out;
}

/** Wraps a fetch so the last response's status, content type and redirect target are recorded. */
export function tracingFetch(fetch: FetchLike, trace: HttpTrace): FetchLike {
  return async (url, init) => {
    const response = await fetch(url, init);
    trace.status = response.status;
    trace.contentType = response.headers.get('content-type') ?? undefined;
    const location = response.headers.get('location');
    try {
      trace.location = location
        ? new URL(location, url instanceof Request ? url.url : url)
        : undefined;
    } catch {
      trace.location = undefined;
    }
    return response;
  };
}

/**
 * The SDK client transport for `streamable_http` or `sse`, sending through `fetch` (the guarded
 * one). Redirects stay the SDK default, `same-origin`: followed within the origin (each hop still
 * goes through the guard), reported otherwise, so credentials never travel to another origin.
 */
export function createHttpTransport(
  transport: 'streamable_http' | 'sse',
  url: URL,
  headers: Record<string, string>,
  fetch: FetchLike,
): Transport {
  const requestInit = { headers };
  const { SSEClientTransport, StreamableHTTPClientTransport } = mcpSdk();
  if (transport === 'sse') return new SSEClientTransport(url, { fetch, requestInit });
  return new StreamableHTTPClientTransport(url, { fetch, requestInit });
}
