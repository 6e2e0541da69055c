/**
 * The agent backend service's client for browsers and Node.js (fetch, streams and the platform's
 * WebSocket only, no Node.js import): {@link AgentBackendClient} for the HTTP API with streamed,
 * self-resuming agent runs, and {@link BrowserWebClient} for a web page's gateway connection.
 * The `ws`-based WebSocket clients of nodes and web clients are in `@agent-backend/client/node`.
 */
export { AgentBackendClient, type CallOptions, type ClientOptions } from './client.js';
export { refreshTokenAuth } from './refresh-token.js';
export { AgentRun, StreamInterruptedError, type ResumeOptions } from './agent-run.js';
export {
  ApiError,
  ConflictError,
  errorForCode,
  ForbiddenError,
  NodeError,
  NotFoundError,
  RateLimitedError,
  ServiceUnavailableError,
  TimeoutError,
  UnauthorizedError,
  ValidationError,
} from './errors.js';
export {
  BrowserWebClient,
  type BrowserWebClientEvent,
  type BrowserWebClientOptions,
} from './browser-web-client.js';
export { paginate, type Page } from './paginate.js';
export { parseSse, type SseMessage } from './sse.js';
export type {
  AgentEvent,
  AgentRun as AgentRunRecord,
  MessageList,
  SessionDetail,
  SessionList,
  SessionSummary,
  StoredMessage,
  UsageReport,
  ApprovalDecisionItem,
  ApprovalDecisionRequest,
  InvokeRequestInput,
  KnowledgeBase,
  KnowledgeDocument,
  KnowledgeSearchHit,
  Memory,
  NodeInfo,
  NodeToolCallResponse,
  ChunkPreviewItem,
  PlaygroundConfig,
  ScheduledTaskDetails,
  SkillListItem,
  WebClientMessage,
  ServerMessage,
} from '@agent-backend/protocol';
