import { DEFAULT_CONTEXT_LIMITS, type ContextLimits } from './context-limits.js';
import { DEFAULT_LLM_MAX_RETRIES, DEFAULT_LLM_TIMEOUT_MS } from './llm-client.js';
import { DEFAULT_LEASE_TTL_MS } from './session-lease.js';
import { DEFAULT_MAX_PARALLEL_TOOLS } from './tool-calls.js';
import { DEFAULT_MAX_RUN_TOOLS } from './tool-bounds.js';

/** Knobs of agent runs; every one has a default. */
export interface AgentSettings {
  /** Model requests per run before it ends with `max_steps_exceeded`. @default 25 */
  readonly maxSteps: number;
  /** Time to the response headers of one model request (per attempt). @default 60_000 */
  readonly llmTimeoutMs: number;
  /** Retries of a model request on 408/409/429/5xx and connection errors. @default 1 */
  readonly llmMaxRetries: number;
  /** Longest silence inside a streamed answer before `llm_timeout`. @default 60_000 */
  readonly llmIdleTimeoutMs: number;
  /** Session lease lifetime (renewed every third of it while the run lives). @default 30_000 */
  readonly leaseTtlMs: number;
  /**
   * Tool calls of one model turn executing at the same time (each node's own
   * `max_concurrent_tasks` applies too); `1` runs them one after the other. @default 8
   */
  readonly maxParallelTools: number;
  /**
   * Tools one run offers the model, built-in and node tools included (OpenAI accepts 128);
   * sources' fill tools (the user's devices') are left out first, then other sources'
   * (`tools_limited` notice). @default 128
   */
  readonly maxTools: number;
  readonly limits: ContextLimits;
}

/** The documented defaults (docs/agent.md, "Configuration"). */
export const DEFAULT_AGENT_SETTINGS: AgentSettings = Object.freeze({
  maxSteps: 25,
  llmTimeoutMs: DEFAULT_LLM_TIMEOUT_MS,
  llmMaxRetries: DEFAULT_LLM_MAX_RETRIES,
  llmIdleTimeoutMs: 60_000,
  leaseTtlMs: DEFAULT_LEASE_TTL_MS,
  maxParallelTools: DEFAULT_MAX_PARALLEL_TOOLS,
  maxTools: DEFAULT_MAX_RUN_TOOLS,
  limits: DEFAULT_CONTEXT_LIMITS,
});
