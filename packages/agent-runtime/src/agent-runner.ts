import { randomUUID } from 'node:crypto';
import type { EphemeralStore } from '@agent-backend/ephemeral';
import type { AgentEvent } from '@agent-backend/protocol';
import type { Database } from '@agent-backend/store';
import { SessionBusyError } from './errors.js';
import { executeRun, type RunEngines, type RunResult } from './execute-run.js';
import { initialRunState } from './run-state.js';
import { acquireSessionLease } from './session-lease.js';
import { SessionRepository } from './session-repository.js';
import { DEFAULT_AGENT_SETTINGS, type AgentSettings } from './settings.js';
import type { RunRequest } from './run-request.js';

/** The engines and hooks a runner uses; one runner serves every run of a process. */
export interface AgentRunnerOptions extends RunEngines {
  readonly db: Database;
  readonly ephemeral: EphemeralStore;
  readonly settings?: Partial<AgentSettings>;
}

/** A run whose session is claimed and locked, ready to execute. */
export interface PreparedRun {
  readonly sessionId: string;
  readonly runId: string;
  /**
   * Runs to the end. Emits `session` first and `done` or `error` last; never rejects. Aborting
   * `signal` stops the model request and the tool loop; `signal.reason`, when an
   * `AgentRunError`, gives the `error` event its code (else `run_aborted`).
   */
  execute(emit: (event: AgentEvent) => void, signal: AbortSignal): Promise<RunResult>;
  /** Frees the session without running (when the stream could not be started). */
  cancel(): Promise<void>;
}

/**
 * Runs agent conversations for every entry point (the SSE endpoint, scheduled tasks, chat
 * messages): session ownership, one run per session, the conversation in the durable
 * store, the tools, the loop.
 */
export class AgentRunner {
  readonly sessions: SessionRepository;
  private readonly settings: AgentSettings;

  constructor(private readonly options: AgentRunnerOptions) {
    this.sessions = new SessionRepository(options.db);
    this.settings = { ...DEFAULT_AGENT_SETTINGS, ...options.settings };
  }

  /**
   * Claims the session for `request.userId` (creating it; generating its id when the request has
   * none) and takes its lease. Session ids are per user: another user's session of the same id
   * is a different session, never this one. Throws before anything is streamed:
   * {@link SessionBusyError} when a run of the user's session is in progress.
   */
  async prepare(request: RunRequest): Promise<PreparedRun> {
    const { userId } = request;
    const sessionId = request.sessionId ?? `sess_${randomUUID()}`;
    const runId = `run_${randomUUID().replace(/-/g, '')}`;
    await this.sessions.claim(sessionId, userId);
    const lease = await acquireSessionLease(
      this.options.ephemeral,
      userId,
      sessionId,
      runId,
      this.settings.leaseTtlMs,
      (error) => this.options.logger.warn({ err: error, sessionId, runId }, 'lease renewal failed'),
    );
    if (!lease) throw new SessionBusyError(sessionId);
    try {
      await this.sessions.startRun({
        runId,
        sessionId,
        userId,
        mode: request.mode,
        model: request.model.name,
        request,
        state: initialRunState(),
      });
    } catch (error) {
      await lease.release();
      throw error;
    }
    return {
      sessionId,
      runId,
      execute: async (emit, signal) => {
        const ended = this.options.metrics?.runStarted(request.mode);
        let result: RunResult | undefined;
        try {
          return (result = await executeRun({
            ...this.options,
            settings: this.settings,
            sessions: this.sessions,
            run: { userId, sessionId, runId, request, signal },
            emit,
            release: () => lease.release(),
          }));
        } finally {
          ended?.(result?.status ?? 'error');
          await lease.release().catch(() => undefined);
        }
      },
      cancel: async () => {
        await this.sessions.finishRun(runId, 'aborted', 'run_aborted').catch(() => undefined);
        await lease.release();
      },
    };
  }
}
