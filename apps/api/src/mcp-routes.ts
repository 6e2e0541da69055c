import { DetailErrorBody, McpValidateRequest, McpValidateResponse } from '@agent-backend/protocol';
import {
  displayUrl,
  McpConnectError,
  scrubSecrets,
  secretsOf,
  StdioPolicy,
  validateMcpServer,
  type McpFailureKind,
  type McpPolicy,
} from '@agent-backend/mcp';
import type { ResponseDoc } from '@agent-backend/http-server';
import { createUrlGuard } from '@agent-backend/url-guard';
import type { ServiceContext } from '@agent-backend/runtime';

/**
 * HTTP status of each validation failure (docs/mcp.md). Every failure body is `{ detail }`, the
 * shape the spec fixes for the 408, so clients handle one shape; the stable code travels in the
 * `x-mcp-error` header. A malformed body is the exception: the service-wide 400 with field errors.
 */
export const MCP_FAILURE_STATUS: Record<McpFailureKind, number> = {
  invalid_config: 400,
  url_refused: 403,
  command_refused: 403,
  timeout: 408,
  aborted: 408,
  auth_rejected: 424,
  dns_failed: 502,
  unreachable: 502,
  tls: 502,
  redirect: 502,
  not_mcp: 502,
  handshake: 502,
  process_failed: 502,
};

/**
 * `POST /api/tools/mcp/validate` (spec 4.4): connects to the MCP server the user describes and
 * answers with its tools and prompts. Requires an access token. The policy (SSRF guard, stdio
 * allowlist) is built once from the configuration, so a malformed allowlist fails at start.
 */
export function registerMcpRoutes({ app, config, requireUser, limits }: ServiceContext): void {
  const policy: McpPolicy = {
    urlGuard: createUrlGuard({ allowPrivateNetworks: config.MCP_ALLOW_PRIVATE_NETWORKS }),
    stdio: new StdioPolicy(config.MCP_STDIO_ALLOWLIST),
  };

  const options = {
    body: McpValidateRequest,
    preHandler: requireUser,
    limit: limits.rate('mcp_validate'),
    doc: {
      tag: 'mcp',
      summary: 'Connect to an MCP server and list its tools and prompts',
      description:
        'Private, loopback and metadata addresses are refused unless `MCP_ALLOW_PRIVATE_NETWORKS` ' +
        'is set; `stdio` runs only commands on `MCP_STDIO_ALLOWLIST`. Every failure to validate ' +
        'answers `{ detail }` (the shape the specification fixes for the timeout) with the kind of ' +
        'failure in the `X-Mcp-Error` header; a malformed body is the service-wide 400.',
      responses: {
        200: { description: 'Connected.', json: McpValidateResponse },
        400: mcpFailure('`invalid_config`: the server configuration cannot be used.'),
        403: mcpFailure(
          '`url_refused` (a private or metadata address) or `command_refused` (stdio command not allowed).',
        ),
        408: mcpFailure(
          '`timeout` or `aborted`: the server did not answer in time; `detail` names the server URL.',
        ),
        424: mcpFailure('`auth_rejected`: the MCP server refused the credentials.'),
        502: mcpFailure(
          '`dns_failed`, `unreachable`, `tls`, `redirect`, `not_mcp`, `handshake` or `process_failed`: the server could not be used.',
        ),
      },
    },
  };
  app.post('/api/tools/mcp/validate', options, async (request, reply) => {
    const body = request.body;
    try {
      const result: McpValidateResponse = await validateMcpServer(body, policy, {
        timeoutMs: config.MCP_VALIDATE_TIMEOUT_MS,
      });
      return result;
    } catch (error) {
      if (!(error instanceof McpConnectError)) throw error;
      const secrets = secretsOf(body);
      const cause = error.cause instanceof Error ? error.cause.message : undefined;
      request.log.warn(
        {
          mcp: {
            name: body.name,
            transport: body.transport_type,
            server: body.transport_type === 'stdio' ? undefined : displayUrl(body.base_url),
            kind: error.kind,
            cause: cause === undefined ? undefined : scrubSecrets(cause, secrets).slice(0, 500),
          },
        },
        'mcp validation failed',
      );
      return reply
        .status(MCP_FAILURE_STATUS[error.kind])
        .header('x-mcp-error', error.kind)
        .send({ detail: error.detail } satisfies DetailErrorBody);
    }
  });
}

/** A validation failure as the document shows it: `{ detail }` and the kind in `X-Mcp-Error`. */
function mcpFailure(description: string): ResponseDoc {
  return {
    description,
    json: DetailErrorBody,
    headers: { 'X-Mcp-Error': 'The kind of failure (`timeout`, `url_refused`, ...).' },
  };
}
