/**
 * Parts shared by the MCP validation body and the `mcp` tool entry of an invoke request.
 * Internal: the package entry exports the schemas built from them, not these pieces.
 */
import { z } from 'zod';
import { boundedJson } from './json-bounds.js';
import { httpUrl } from './http-url.js';

/** How the service talks to an MCP server (spec 4.4). */
export const McpTransportType = z.enum(['streamable_http', 'sse', 'stdio']);
export type McpTransportType = z.infer<typeof McpTransportType>;

export const mcpServerShape = {
  name: z.string().min(1),
  /**
   * The server URL for `streamable_http` and `sse` (http or https). For `stdio` the spec has no
   * separate field, so this holds the command line; the service only runs it when the command
   * is on its server-side allowlist.
   */
  base_url: z.string().min(1),
  /** @default 'streamable_http' */
  transport_type: McpTransportType.default('streamable_http'),
  /** Sent to the MCP server as `Authorization: Bearer <api_key>`. */
  api_key: z.string().optional(),
  /** Extra HTTP headers for the MCP server. */
  headers: boundedJson(z.record(z.string(), z.string()), { maxChars: 16 * 1024 }).optional(),
};

const httpBaseUrl = httpUrl('base_url must be an http(s) URL');

/** A refinement on the object, not on the field, because the rule depends on `transport_type`. */
export function checkMcpBaseUrl(
  value: { base_url: string; transport_type: McpTransportType },
  ctx: z.core.$RefinementCtx,
): void {
  if (value.transport_type === 'stdio' || httpBaseUrl.safeParse(value.base_url).success) return;
  ctx.addIssue({
    code: 'custom',
    path: ['base_url'],
    message: `base_url must be an http(s) URL when transport_type is "${value.transport_type}"`,
  });
}
