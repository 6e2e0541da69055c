import type { TurnBudget } from './agent-loop.js';
import type { AssistantMessage } from './chat-message.js';
import type { Logger } from '@agent-backend/logger';
import type { AgentMetrics } from '@agent-backend/metrics';
import type { AgentEvent } from '@agent-backend/protocol';
import type { ModelUrlGuard } from './model-url-guard.js';
import type { PendingTurn, RunState } from './run-state.js';
import type { SessionRepository } from './session-repository.js';
import type { AgentSettings } from './settings.js';
import type { RunInfo, ToolSource } from './tool.js';
import type { BeforeToolCall, PendingToolCall, ToolCallDecision } from './tool-execution.js';

/**
 * How a run ended, or that it suspended (waiting for approvals, see `RunState`), or that this
 * process handed it over (a worker's drain, see `RunHandOver`): it goes on elsewhere.
 */
export interface RunResult {
  readonly status: 'done' | 'error' | 'aborted' | 'suspended' | 'handed_over';
  readonly code?: string;
}

/** A held call of a suspended run, asked about again when the run resumes. */
export type ResumeApproval = (
  call: PendingToolCall & { readonly requestId: string; readonly expiresAt: string },
) => Promise<ToolCallDecision>;

/** What every run of a runner shares: the tools, the hooks, the log and the meters. */
export interface RunEngines {
  readonly logger: Logger;
  readonly toolSources?: readonly ToolSource[];
  /** Per run: the hook before each tool executes (HITL); absent: tools run at once. */
  readonly beforeToolCall?: (run: RunInfo) => BeforeToolCall | undefined;
  /**
   * Per run: the outcome of a call held while the run was suspended (HITL): run, skip, or hold
   * again (the run suspends again). Absent: such calls are refused.
   */
  readonly resumeApproval?: (run: RunInfo) => ResumeApproval | undefined;
  /**
   * The SSRF guard for `llm_config.baseUrl` (see `createLlmClient`); absent: base URLs are
   * reached with the platform `fetch` (operator-configured models, tests).
   */
  readonly modelUrlGuard?: ModelUrlGuard;
  /** Runs by mode and outcome, their duration, model latency and tokens. @default none */
  readonly metrics?: AgentMetrics;
  /** Per run: the user's daily token budget; absent: not limited. */
  readonly tokenBudget?: (run: RunInfo) => TurnBudget | undefined;
}

export interface ExecuteRunOptions extends RunEngines {
  readonly run: RunInfo;
  /**
   * Where a run that continues here stood (a run taken over, a suspended run resumed): no new
   * `session` event, no new user message; its stored conversation and pending turn go on.
   */
  readonly resume?: RunState;
  readonly sessions: SessionRepository;
  readonly settings: AgentSettings;
  /**
   * The session and run rows, when they are written behind the stream's start (see
   * `PrepareOptions.writeBehind`): every later write of the run waits for them, and a failure
   * ends the run with `error`. Absent: written before the run was prepared.
   */
  readonly written?: Promise<void>;
  /**
   * The session's lease, when it is taken while the run starts (a session new with the run):
   * no event goes out before it is held, so a client that got one can join the run on any
   * replica before its rows are stored (the lease and the run log name it). Absent: held before
   * the run was prepared.
   */
  readonly leased?: Promise<void>;
  /**
   * The run's opening messages (a new session's history from the client, the user message) are
   * stored with its rows by `written`, in the same statement: nothing more to write for them.
   */
  readonly openingStored?: boolean;
  /**
   * The session is new, its id generated for this run: it has no stored conversation or state
   * to read before the model request.
   */
  readonly freshSession?: boolean;
  emit(event: AgentEvent): void;
  /** Before a call's tool executes: resolves once the events so far are durable (run log). */
  durable?(): Promise<void>;
  /** @see AgentLoopOptions.recordTurn */
  recordTurn?(assistant: AssistantMessage, step: number): Promise<void>;
  /** Deletes the run's turn record once the run is recorded as ended (done, error, aborted). */
  forgetTurn?(): Promise<void>;
  /**
   * Frees the session; called after everything is stored and before the last event. With
   * `holdMs` (the run suspended) the session stays locked that long for the run's resume.
   */
  release(holdMs?: number): Promise<void>;
}

/** What a step stores besides its messages: where the run is (see RunState). */
export interface RunProgress {
  readonly usage: { prompt_tokens: number; completion_tokens: number };
  lastSeq(): number;
  /** The turn the run suspended on, once it did. */
  suspended?: PendingTurn;
}

export type RunOptions = ExecuteRunOptions & {
  readonly progress: RunProgress;
  /** This run's view of the token budget (from `tokenBudget`); absent: not limited. */
  readonly budget?: TurnBudget;
};
