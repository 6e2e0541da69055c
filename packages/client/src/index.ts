/**
 * The agent backend service's client for browsers and Node.js (fetch and streams only, no
 * Node.js import): {@link AgentBackendClient} for the HTTP API with streamed, self-resuming
 * agent runs. The WebSocket clients of nodes and web pages are in `@agent-backend/client/node`.
 */
export {
  AgentBackendClient,
  AgentRun,
  ApiError,
  refreshTokenAuth,
  StreamInterruptedError,
  type ClientOptions,
} from './client.js';
export { parseSse, type SseMessage } from './sse.js';
export type {
  AgentEvent,
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
