export { mountApi } from './api-role.js';
export { DEMO_MODEL_NAME } from './playground-routes.js';
export { MCP_FAILURE_STATUS } from './mcp-routes.js';
