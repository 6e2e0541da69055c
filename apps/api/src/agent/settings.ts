import { z } from 'zod';
import { DEFAULT_AGENT_SETTINGS, type AgentSettings } from '@agent-backend/agent-runtime';

const ms = (fallback: number, min = 1) => z.coerce.number().int().min(min).default(fallback);

/**
 * Environment of the agent endpoints, validated when the api role mounts them (every problem
 * reported at once). Kept beside the routes until they move into the service's config schema.
 */
export const AgentEnv = z.object({
  /** Model requests per run. */
  AGENT_MAX_STEPS: z.coerce.number().int().min(1).max(200).default(DEFAULT_AGENT_SETTINGS.maxSteps),
  /** Time to the response headers of a model request. */
  AGENT_LLM_TIMEOUT_MS: ms(DEFAULT_AGENT_SETTINGS.llmTimeoutMs),
  /** Retries on 408/409/429/5xx and connection errors. */
  AGENT_LLM_MAX_RETRIES: z.coerce
    .number()
    .int()
    .min(0)
    .max(5)
    .default(DEFAULT_AGENT_SETTINGS.llmMaxRetries),
  /** Longest silence inside a streamed answer. */
  AGENT_LLM_IDLE_TIMEOUT_MS: ms(DEFAULT_AGENT_SETTINGS.llmIdleTimeoutMs),
  /** A `: keepalive` comment after this long without a write. */
  AGENT_KEEPALIVE_MS: ms(15_000, 100),
  /** How long a run outlives its last client before it is aborted (0: at once). */
  AGENT_DISCONNECT_GRACE_MS: ms(10_000, 0),
  /** Session lease lifetime (renewed every third of it). */
  AGENT_SESSION_LEASE_MS: ms(DEFAULT_AGENT_SETTINGS.leaseTtlMs, 300),
});

/** The parsed `AGENT_*` settings: the runner's, and the stream's own. */
export interface AgentRouteSettings {
  readonly agent: Partial<AgentSettings>;
  readonly keepaliveMs: number;
  readonly disconnectGraceMs: number;
}

/** Thrown at mount when an `AGENT_*` variable is invalid; lists every problem. */
export class AgentEnvError extends Error {
  constructor(problems: string[]) {
    super(`invalid agent configuration:\n${problems.map((p) => `  ${p}`).join('\n')}`);
    this.name = 'AgentEnvError';
  }
}

/** Parses the `AGENT_*` variables of `env`; throws {@link AgentEnvError} listing every problem. */
export function loadAgentSettings(env: NodeJS.ProcessEnv): AgentRouteSettings {
  const present = Object.fromEntries(
    Object.entries(env).filter(([key, value]) => key.startsWith('AGENT_') && value !== ''),
  );
  const parsed = AgentEnv.safeParse(present);
  if (!parsed.success) {
    throw new AgentEnvError(
      parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`),
    );
  }
  const e = parsed.data;
  return {
    agent: {
      maxSteps: e.AGENT_MAX_STEPS,
      llmTimeoutMs: e.AGENT_LLM_TIMEOUT_MS,
      llmMaxRetries: e.AGENT_LLM_MAX_RETRIES,
      llmIdleTimeoutMs: e.AGENT_LLM_IDLE_TIMEOUT_MS,
      leaseTtlMs: e.AGENT_SESSION_LEASE_MS,
    },
    keepaliveMs: e.AGENT_KEEPALIVE_MS,
    disconnectGraceMs: e.AGENT_DISCONNECT_GRACE_MS,
  };
}
