import {
  classifyOutboundFailure,
  errorChain,
  PRIVATE_CATEGORIES,
  type UrlRefusedError,
} from '@agent-backend/url-guard';
import { McpConnectError } from './errors.js';
import type { HttpTrace } from './http-transport.js';
import { scrubSecrets } from './redact.js';
import type { StdioProcessTransport } from './stdio-transport.js';
import { mcpSdk } from './mcp-sdk.js';

/** What is known about a failed attempt besides the error itself. */
export interface FailureContext {
  /** The server as users may see it: URL without credentials or query, or `stdio command "x"`. */
  readonly target: string;
  readonly timeoutMs: number;
  readonly deadlineExpired: boolean;
  readonly callerAborted: boolean;
  /** The root cause the guarded fetch saw, which SDK errors sometimes replace with text. */
  readonly fetchError?: Error | undefined;
  readonly trace?: HttpTrace | undefined;
  readonly stdio?: StdioProcessTransport | undefined;
  /** Values to scrub from anything taken from the server's answers. */
  readonly secrets: readonly string[];
}

const codeOf = (e: unknown): string | undefined => {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
};

/**
 * The refusal, and the setting that would allow it: MCP_ALLOW_PRIVATE_NETWORKS for the private
 * categories (and nothing narrower: LLM_ALLOWED_ORIGINS is for model servers only), nothing for
 * cloud metadata, multicast and reserved addresses, which no setting opens.
 */
function refusedDetail(target: string, error: UrlRefusedError): string {
  if (PRIVATE_CATEGORIES.has(error.reason as never))
    return `Refused to connect to ${target}: ${error.message}. This server does not connect to loopback, private, link-local or cloud metadata addresses; the operator can allow loopback and private networks for MCP servers with MCP_ALLOW_PRIVATE_NETWORKS=true.`;
  if (error.reason === 'metadata')
    return `Refused to connect to ${target}: ${error.message}. This server never connects to cloud metadata addresses.`;
  return `Refused to connect to ${target}: ${error.message}.`;
}

/**
 * Turns whatever a connection attempt threw (our guard, Node's network stack, the SDK's
 * transports, a JSON-RPC error from the server, a stdio process that died) into one
 * {@link McpConnectError} whose detail tells the user what to fix. Text that came from the server
 * is scrubbed of the request's secrets and truncated.
 */
export function classifyFailure(error: unknown, ctx: FailureContext): McpConnectError {
  const fail = (kind: McpConnectError['kind'], detail: string) =>
    new McpConnectError(kind, scrubSecrets(detail, ctx.secrets), { cause: error });
  const { target } = ctx;
  const server = serverPhrase(target, ctx.stdio !== undefined);
  if (error instanceof McpConnectError) return error;
  const { ErrorCode, McpError, SseError, StreamableHTTPError } = mcpSdk();
  if (ctx.deadlineExpired)
    return fail('timeout', `Timed out after ${ctx.timeoutMs} ms waiting for ${server}.`);
  if (ctx.callerAborted) return fail('aborted', `The request to ${target} was cancelled.`);

  const errors = [...errorChain(error), ...(ctx.fetchError ? errorChain(ctx.fetchError) : [])];
  const outbound = classifyOutboundFailure(error, ctx.fetchError);
  if (outbound?.kind === 'refused')
    return fail('url_refused', refusedDetail(target, outbound.refusal));

  if (error instanceof McpError && error.code === ErrorCode.RequestTimeout)
    return fail('timeout', `Timed out after ${ctx.timeoutMs} ms waiting for ${server}.`);

  const stdio = ctx.stdio;
  if (stdio) {
    const code = codeOf(errors.find((e) => codeOf(e) === 'ENOENT' || codeOf(e) === 'EACCES'));
    if (code === 'ENOENT')
      return fail('process_failed', `The ${target} was not found on this server.`);
    if (code === 'EACCES') return fail('process_failed', `The ${target} is not executable.`);
    if (
      stdio.invalidOutput &&
      !(error instanceof McpError && error.code < ErrorCode.ConnectionClosed)
    )
      return fail('not_mcp', `The ${target} wrote output that is not MCP JSON-RPC to stdout.`);
    if (stdio.exit) {
      const how = stdio.exit.signal
        ? `was killed by ${stdio.exit.signal}`
        : `exited with code ${stdio.exit.code}`;
      return fail('process_failed', `The ${target} ${how} before answering.`);
    }
  }

  const httpError = errors.find(
    (e) => e instanceof StreamableHTTPError || e instanceof SseError,
  ) as { code?: unknown; message: string } | undefined;
  const status =
    typeof httpError?.code === 'number' && httpError.code >= 100 ? httpError.code : undefined;
  if (status === 401 || status === 403)
    return fail(
      'auth_rejected',
      `${capitalize(server)} rejected the credentials (HTTP ${status}). Check api_key and headers.`,
    );
  if (status !== undefined && status >= 300 && status < 400) {
    const to = ctx.trace?.location?.origin;
    return fail(
      'redirect',
      `${capitalize(server)} redirected to ${to ?? 'another origin'}; redirects to another origin are not followed. Use the final URL.`,
    );
  }
  if (status !== undefined && status !== 200) {
    const hint =
      status === 404 || status === 405
        ? ' Check the URL path and transport_type (streamable_http takes the MCP endpoint, often /mcp; sse takes the event stream, often /sse).'
        : '';
    return fail('not_mcp', `${target} did not answer as an MCP server (HTTP ${status}).${hint}`);
  }

  if (outbound?.kind === 'tls')
    return fail('tls', `The TLS connection to ${target} failed: ${outbound.description}.`);
  if (outbound?.kind === 'dns')
    return fail('dns_failed', `Could not reach ${server}: ${outbound.description}.`);
  if (outbound?.kind === 'connect')
    return fail('unreachable', `Could not reach ${server}: ${outbound.description}.`);

  const contentType = ctx.trace?.contentType;
  if (
    (httpError && /content type|content-type/i.test(httpError.message)) ||
    errors.some((e) => e instanceof SyntaxError || (e as Error | null)?.name === 'ZodError')
  ) {
    const what = contentType
      ? `answered with ${contentType.split(';')[0]}`
      : 'answered with something else';
    return fail('not_mcp', `${target} is not an MCP server: it ${what} instead of MCP JSON-RPC.`);
  }

  if (error instanceof McpError) {
    if (error.code === ErrorCode.ConnectionClosed)
      return fail('handshake', `${capitalize(server)} closed the connection during the handshake.`);
    return fail(
      'handshake',
      `${capitalize(server)} answered with an error: ${truncate(error.message)}`,
    );
  }
  const message = error instanceof Error ? error.message : String(error);
  return fail('handshake', `The MCP handshake with ${target} failed: ${truncate(message)}`);
}

/** `the MCP server at <url>` or `the MCP server (stdio command "x")`, for messages. */
export function serverPhrase(target: string, stdio: boolean): string {
  return stdio ? `the MCP server (${target})` : `the MCP server at ${target}`;
}

const capitalize = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

function truncate(text: string, max = 300): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
