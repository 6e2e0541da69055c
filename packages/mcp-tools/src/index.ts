export { createMcpTools, type McpTools, type McpToolsOptions } from './mcp-tool-source.js';
export {
  ConnectionPool,
  poolKey,
  type Connect,
  type ConnectionPoolOptions,
} from './connection-pool.js';
export { ToolNameAllocator } from './tool-names.js';
export { resultText, MAX_RESULT_CHARS } from './result-text.js';
export { failureText, unavailableTool } from './unavailable-tool.js';
export { mcpPolicy, type McpPolicyConfig } from './policy.js';
export { mcpToolsCapability, type McpToolsDeps } from './capability.js';
