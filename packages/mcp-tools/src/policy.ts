import { StdioPolicy, type McpPolicy } from '@agent-backend/mcp';
import { createUrlGuard } from '@agent-backend/url-guard';

/** The configuration keys the MCP policy is built from (a subset of the service config). */
export interface McpPolicyConfig {
  readonly MCP_ALLOW_PRIVATE_NETWORKS: boolean;
  readonly MCP_STDIO_ALLOWLIST: readonly string[];
}

/**
 * The policy for MCP servers named in invoke requests: the same SSRF guard and stdio allowlist
 * as `POST /api/tools/mcp/validate`, so a server that validation refuses is refused here too.
 */
export function mcpPolicy(config: McpPolicyConfig): McpPolicy {
  return {
    urlGuard: createUrlGuard({ allowPrivateNetworks: config.MCP_ALLOW_PRIVATE_NETWORKS }),
    stdio: new StdioPolicy(config.MCP_STDIO_ALLOWLIST),
  };
}
