export { mountApi } from './api-role.js';
export { MCP_FAILURE_STATUS } from './mcp-routes.js';
