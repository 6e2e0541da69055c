/**
 * The agent runtime: runs a conversation on an OpenAI-compatible model with streamed answers
 * and tool calls, keeps sessions in the durable store, one run per session at a time.
 */
export {
  ConversationRepository,
  deleteSessions,
  PREVIEW_CHARS,
} from './conversation-repository.js';
export { InvalidCursorError } from './list-cursor.js';
export { UsageRepository, type DayRange } from './usage-repository.js';
export {
  AgentRunner,
  newRunId,
  type AgentRunnerOptions,
  type PrepareOptions,
  type PreparedRun,
  type RunHostHooks,
} from './agent-runner.js';
export {
  runRequest,
  type RunCapabilities,
  type RunModel,
  type RunRequest,
  type RunRequestInput,
} from './run-request.js';
export type { ResumeApproval, RunResult } from './run-options.js';
export { ANSWER_RESTARTED_NOTICE, INTERRUPTED_CONTENT } from './run-answer.js';
export { runToText, type RunText } from './run-to-text.js';
export { runAgentLoop, type AgentLoopOptions, type TurnBudget } from './agent-loop.js';
export { ChatMessage } from './chat-message.js';
export { DEFAULT_CONTEXT_LIMITS, truncate, type ContextLimits } from './context-limits.js';
export { contextSection, fitHistory, userMessage } from './context.js';
export {
  AgentRunError,
  RUN_ERROR_CODES,
  RunHandOver,
  RunSuspendedError,
  SessionBusyError,
  type RunErrorCode,
} from './errors.js';
export {
  createLlmClient,
  DEFAULT_LLM_MAX_RETRIES,
  DEFAULT_LLM_TIMEOUT_MS,
  type LlmClientOptions,
} from './llm-client.js';
export { preloadOpenai } from './openai-sdk.js';
export { ModelConnectError, ModelUrlGuard, modelUrlFailure } from './model-url-guard.js';
export { streamModelTurn, TurnAbortedError, type ModelTurn } from './model-turn.js';
export {
  MAX_TODOS,
  PROPOSE_PLAN,
  proposePlanTool,
  WRITE_TODOS,
  writeTodosTool,
} from './planning-tools.js';
export { scrubSecrets, toRunError } from './provider-errors.js';
export {
  acquireSessionLease,
  adoptSessionLease,
  releaseSessionLease,
  DEFAULT_LEASE_TTL_MS,
  sessionLeaseHolder,
  sessionLeaseKey,
  userLeaseHolders,
  type SessionLease,
} from './session-lease.js';
export {
  chatSessionId,
  isReservedSessionId,
  RESERVED_SESSION_ID_PREFIXES,
  scheduledRunSessionId,
} from './session-ids.js';
export {
  SessionRepository,
  type RunStatus,
  type SessionKey,
  type SessionRecord,
} from './session-repository.js';
export { parseSessionState, SessionState } from './session-state.js';
export { AGENT_RUNS_QUEUE, RunRepository, type StoredRun } from './run-repository.js';
export {
  HeldApproval,
  initialRunState,
  parseRunState,
  PendingTurn,
  RunState,
  SettledCall,
} from './run-state.js';
export { deleteTurnRecords, readTurnRecord, TurnRecord, turnRecordKey } from './turn-record.js';
export { DEFAULT_AGENT_SETTINGS, type AgentSettings } from './settings.js';
export {
  availability,
  ToolRegistry,
  ToolRegistryError,
  TOOL_NAME,
  type AgentTool,
  type RunContribution,
  type RunInfo,
  type ToolContext,
  type ToolOutput,
  type ToolSource,
} from './tool.js';
export { defineTool } from './builtin-tool.js';
export type { Capability } from './capability.js';
export { sanitizeToolName } from './tool-names.js';
export {
  boundRunTools,
  DEFAULT_MAX_RUN_TOOLS,
  MAX_RESULT_IMAGE_BYTES,
  MAX_RESULT_IMAGES,
  TOOLS_LIMITED_NOTICE,
  toolsLimitedNotice,
  type RunTools,
} from './tool-bounds.js';
export {
  CANCELLED_CONTENT,
  executeToolCall,
  type BeforeToolCall,
  type PendingToolCall,
  type ToolCallDecision,
} from './tool-execution.js';
export { ToolCallAccumulator, type AssembledToolCall } from './tool-call-accumulator.js';
export {
  DEFAULT_MAX_PARALLEL_TOOLS,
  runToolCalls,
  type ToolCallsOptions,
  type ToolCallsOutcome,
} from './tool-calls.js';
export { Semaphore, type Release } from './semaphore.js';
