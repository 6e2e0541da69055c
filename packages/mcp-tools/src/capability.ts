import type { Capability } from '@agent-backend/agent-runtime';
import type { Logger } from '@agent-backend/logger';
import { createMcpTools } from './mcp-tool-source.js';
import { mcpPolicy, type McpPolicyConfig } from './policy.js';

export interface McpToolsDeps {
  readonly logger: Logger;
}

/**
 * The tools of the MCP servers a run names (docs/mcp.md), through one connection pool per
 * capability: the agent builds it once per process, so every run of the process shares it.
 * Closing it closes the pooled connections.
 */
export function mcpToolsCapability(deps: McpToolsDeps, settings: McpPolicyConfig): Capability {
  const tools = createMcpTools({ policy: mcpPolicy(settings), logger: deps.logger });
  return { source: tools.source, close: () => tools.close() };
}
