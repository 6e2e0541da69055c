/**
 * Why connecting to (or talking with) an MCP server failed. Stable codes: the HTTP layer maps
 * them to statuses (docs/mcp.md), and the agent runtime can map them to tool errors.
 *
 * - `invalid_config`: the request cannot be acted on (a malformed command line, a bad header).
 * - `url_refused`: the URL or an address it resolves or redirects to is not allowed (SSRF guard).
 * - `command_refused`: the stdio command is not on the server's allowlist.
 * - `timeout`: no complete answer within the deadline.
 * - `aborted`: the caller gave up (its signal fired).
 * - `dns_failed`: the host name does not resolve (or the resolver failed).
 * - `unreachable`: TCP or connection-level failure (refused, reset, no route, timed out).
 * - `tls`: the TLS handshake failed (certificate, protocol).
 * - `auth_rejected`: the server answered 401 or 403.
 * - `redirect`: the server redirected to another origin, which is not followed.
 * - `not_mcp`: something answered, but not as an MCP server (status, content type, payload).
 * - `handshake`: an MCP server that refused or failed `initialize` or a listing.
 * - `process_failed`: the stdio process could not start or exited early.
 */
export type McpFailureKind =
  | 'invalid_config'
  | 'url_refused'
  | 'command_refused'
  | 'timeout'
  | 'aborted'
  | 'dns_failed'
  | 'unreachable'
  | 'tls'
  | 'auth_rejected'
  | 'redirect'
  | 'not_mcp'
  | 'handshake'
  | 'process_failed';

/**
 * A failure with a message written for the user who configured the server: it names the server
 * (URL without credentials or query, or the command name) and what to check. Secrets the request
 * carried (`api_key`, header values) are scrubbed from it before it is built into an error.
 */
export class McpConnectError extends Error {
  constructor(
    readonly kind: McpFailureKind,
    /** The user-facing explanation; safe to return in a response body. */
    readonly detail: string,
    options?: { cause?: unknown },
  ) {
    super(detail, options);
    this.name = 'McpConnectError';
  }
}
