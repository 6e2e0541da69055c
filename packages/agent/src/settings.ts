import type { AgentSettings } from '@agent-backend/agent-runtime';
import type { Config } from '@agent-backend/config';

/** The `AGENT_*` settings: the runner's, and the SSE stream's own (api role). */
export interface AgentServiceSettings {
  readonly runner: Partial<AgentSettings>;
  readonly keepaliveMs: number;
  /** An SSE stream whose client took nothing for this long is ended. */
  readonly sseStallTimeoutMs: number;
  readonly disconnectGraceMs: number;
  /** `AGENT_SUSPEND_AFTER_MS`; absent: a listening client keeps a waiting run held. */
  readonly suspendAfterMs?: number;
  /** Runs whose replica died are taken over (`AGENT_TAKEOVER`). */
  readonly takeover: boolean;
  readonly takeoverCheckMs: number;
}

/** Maps the validated `AGENT_*` configuration (packages/config) to the runtime's settings. */
export function agentSettings(config: Config): AgentServiceSettings {
  return {
    runner: {
      maxSteps: config.AGENT_MAX_STEPS,
      llmTimeoutMs: config.AGENT_LLM_TIMEOUT_MS,
      llmMaxRetries: config.AGENT_LLM_MAX_RETRIES,
      llmIdleTimeoutMs: config.AGENT_LLM_IDLE_TIMEOUT_MS,
      leaseTtlMs: config.AGENT_SESSION_LEASE_MS,
      maxParallelTools: config.AGENT_MAX_PARALLEL_TOOLS,
      maxTools: config.AGENT_MAX_TOOLS,
    },
    keepaliveMs: config.AGENT_KEEPALIVE_MS,
    sseStallTimeoutMs: config.AGENT_SSE_STALL_TIMEOUT_MS,
    disconnectGraceMs: config.AGENT_DISCONNECT_GRACE_MS,
    ...(config.AGENT_SUSPEND_AFTER_MS !== undefined
      ? { suspendAfterMs: config.AGENT_SUSPEND_AFTER_MS }
      : {}),
    takeover: config.AGENT_TAKEOVER,
    takeoverCheckMs: config.AGENT_TAKEOVER_CHECK_MS,
  };
}
