/**
 * Schemas and types of every wire message of the service: HTTP bodies, SSE events, WebSocket
 * messages, JSON-RPC tool calls and chat-platform callbacks. Each schema and its type share a
 * name; parse untrusted input with `safeParse` and report failures with {@link fieldErrors}.
 */
export * from './agent-events.js';
export * from './audit.js';
export * from './auth.js';
export * from './token-service.js';
export * from './chat-platform.js';
export * from './connection-order.js';
export * from './conversations.js';
export * from './dependency-errors.js';
export * from './errors.js';
export * from './health.js';
export * from './invoke.js';
export * from './json-bounds.js';
export * from './json-rpc.js';
export * from './job-trace.js';
export * from './knowledge.js';
export * from './mcp.js';
export * from './operator.js';
export * from './memory.js';
export * from './nodes.js';
export * from './node-record.js';
export * from './scheduled-task.js';
export * from './ws-endpoints.js';
export * from './ws-messages.js';
export * from './skills.js';
export * from './text-rules.js';
export * from './user-data.js';
