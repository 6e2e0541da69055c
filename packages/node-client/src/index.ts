/**
 * Typed WebSocket clients of the gateway: {@link NodeClient} for browser extensions and desktop
 * apps (register, heartbeats, JSON-RPC tool calls, workflows) and {@link WebClient} for web
 * clients (workflows of the user's extension). Both reconnect with exponential backoff and
 * jitter, refresh the token after 4401, and stop on final close codes. Node.js only (`ws`), as
 * it sends the token in a header; see docs/clients.md.
 */
export { Backoff, resolveReconnectOptions, type ReconnectOptions } from './backoff.js';
export { CloseCode, closeAction, handshakeAction, type CloseAction } from './close-codes.js';
export { ClientError, type ClientErrorCode } from './errors.js';
export { checkArguments, ToolParamsError, type JsonSchema } from './input-schema.js';
export {
  NodeClient,
  type NodeClientEvents,
  type NodeClientOptions,
  type NodeDescription,
} from './node-client.js';
export type { ConnectionEvents } from './connection-events.js';
export type { ConnectionOptions, DisconnectInfo, TokenReason } from './reconnecting-socket.js';
export {
  NODE_BUSY_CODE,
  type ToolCallEvent,
  type ToolContext,
  type ToolDefinition,
  type ToolOutput,
  type ToolResultEvent,
} from './tool-runner.js';
export type { Listener } from './typed-emitter.js';
export { WebClient, type WebClientEvents, type WebClientOptions } from './web-client.js';
export type {
  WorkflowDoneEvent,
  WorkflowOutcome,
  WorkflowProvider,
  WorkflowRunEvent,
} from './workflow-runner.js';
export { demoTools, demoWorkflows } from './demo-tools.js';
export { gatewayUrl, redactUrl } from './ws-url.js';
