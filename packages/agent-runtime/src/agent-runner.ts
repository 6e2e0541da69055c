import { randomUUID } from 'node:crypto';
import type { EphemeralStore } from '@agent-backend/ephemeral';
import type { AgentEvent } from '@agent-backend/protocol';
import type { Database } from '@agent-backend/store';
import type { ChatMessage } from './chat-message.js';
import { userMessage } from './context.js';
import { SessionBusyError } from './errors.js';
import { executeRun, type RunEngines, type RunResult } from './execute-run.js';
import { RunRepository, type StoredRun } from './run-repository.js';
import { initialRunState, type RunState } from './run-state.js';
import { acquireSessionLease, adoptSessionLease, type SessionLease } from './session-lease.js';
import { SessionRepository } from './session-repository.js';
import { deleteTurnRecords, recordTurn } from './turn-record.js';
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
  readonly userId: string;
  readonly sessionId: string;
  readonly runId: string;
  /** Events the run sent before (its stream continues at `lastSeq + 1`); 0 for a new run. */
  readonly lastSeq: number;
  /**
   * Runs to the end. Emits `session` first and `done` or `error` last; never rejects. Aborting
   * `signal` stops the model request and the tool loop; `signal.reason`, when an
   * `AgentRunError`, gives the `error` event its code (else `run_aborted`).
   */
  execute(
    emit: (event: AgentEvent) => void,
    signal: AbortSignal,
    host?: RunHostHooks,
  ): Promise<RunResult>;
  /** Frees the session without running (when the stream could not be started). */
  cancel(): Promise<void>;
  /**
   * Leaves the run to another process (a background run's worker, see {@link AgentRunner.adopt}):
   * the session stays locked for one lease lifetime for it to adopt.
   */
  handOver(): Promise<void>;
}

/** What the process hosting a run offers it besides its events' destination. */
export interface RunHostHooks {
  /**
   * Aborted when the run should suspend (its client left, the replica drains): a run whose
   * calls wait for approvals then stores itself and ends with `suspended`.
   */
  readonly suspend?: AbortSignal;
  /** Resolves once the events sent so far are durable (the run log). */
  durable?(): Promise<void>;
}

/** How a run is prepared besides its request. */
export interface PrepareOptions {
  /** Recorded with the run: it executes on a worker, its client joins by run id. */
  readonly background?: boolean;
  /** The run's id, when the caller chose it first ({@link newRunId}); generated otherwise. */
  readonly runId?: string;
  /**
   * Writes the session and run rows while the run starts (its model request goes out at once)
   * instead of before `prepare` resolves: only the session's lease is taken first (a busy
   * session still throws {@link SessionBusyError}). A failed write ends the run with `error`
   * before `done`. Not with `background`: the worker reads the run row.
   */
  readonly writeBehind?: boolean;
}

/** A new run id (`run_<32 hex digits>`). */
export const newRunId = (): string => `run_${randomUUID().replace(/-/g, '')}`;

/**
 * Runs agent conversations for every entry point (the SSE endpoint, scheduled tasks, chat
 * messages): session ownership, one run per session, the conversation in the durable
 * store, the tools, the loop.
 */
export class AgentRunner {
  readonly sessions: SessionRepository;
  readonly runs: RunRepository;
  private readonly settings: AgentSettings;

  constructor(private readonly options: AgentRunnerOptions) {
    this.sessions = new SessionRepository(options.db);
    this.runs = new RunRepository(options.db);
    this.settings = { ...DEFAULT_AGENT_SETTINGS, ...options.settings };
  }

  /**
   * Claims the session for `request.userId` (creating it; generating its id when the request has
   * none) and takes its lease. Session ids are per user: another user's session of the same id
   * is a different session, never this one. Throws before anything is streamed:
   * {@link SessionBusyError} when a run of the user's session is in progress.
   */
  async prepare(request: RunRequest, options: PrepareOptions = {}): Promise<PreparedRun> {
    const { userId } = request;
    const sessionId = request.sessionId ?? `sess_${randomUUID()}`;
    const runId = options.runId ?? newRunId();
    const behind = options.writeBehind === true && !options.background;
    const freshSession = request.sessionId === undefined;
    // A session new with a run written behind its start: its first messages are stored with
    // the run's rows, in one statement (see `ExecuteRunOptions.openingStored`).
    const opening = behind && freshSession ? openingMessages(request, this.settings) : undefined;
    const startRun = () =>
      this.sessions.startRun({
        runId,
        sessionId,
        userId,
        mode: request.mode,
        model: request.model.name,
        request,
        state: initialRunState(),
        ...(options.background ? { background: true } : {}),
        ...(opening ? { opening } : {}),
      });
    if (!behind) await this.sessions.claim(sessionId, userId);
    const acquire = () =>
      acquireSessionLease(
        this.options.ephemeral,
        userId,
        sessionId,
        runId,
        this.settings.leaseTtlMs,
        (error) =>
          this.options.logger.warn({ err: error, sessionId, runId }, 'lease renewal failed'),
      );
    const run = { runId, sessionId, userId, request, state: initialRunState() };
    if (behind && freshSession) {
      // A session id generated just now: nobody else can hold its lease, so it is taken while
      // the rows are written (a store failure fails the run like a failed write).
      // Both start on the next turn of the event loop, after the work that sends the run's model
      // request has begun: started first, they woke PostgreSQL and Redis ahead of it, and on a
      // two-core host that delayed the request (`bench/invoke-ab.ts`: the first chunk over the
      // model's own 1.82 → 1.51 ms; docs/BENCHMARKS.md, "Writes after the model request").
      const turn = new Promise<void>((resolve) => setImmediate(resolve));
      const leased = turn.then(acquire).then((lease) => {
        if (!lease) throw new SessionBusyError(sessionId);
        return lease;
      });
      const written = Promise.all([leased, turn.then(startRun)]).then(() => undefined);
      written.catch(() => undefined);
      const lease: SessionLease = {
        release: () =>
          leased.then(
            (l) => l.release(),
            () => undefined,
          ),
        handOver: (holdMs) =>
          leased.then(
            (l) => l.handOver(holdMs),
            () => undefined,
          ),
      };
      const held = leased.then(() => undefined);
      held.catch(() => undefined);
      return this.ready(run, lease, {
        written,
        freshSession,
        leased: held,
        openingStored: true,
      });
    }
    const lease = await acquire();
    if (!lease) throw new SessionBusyError(sessionId);
    if (behind) {
      // Under the lease; one statement claims the session and records the run.
      const written = startRun();
      written.catch(() => undefined);
      return this.ready(run, lease, { written, freshSession });
    }
    try {
      await startRun();
    } catch (error) {
      await lease.release();
      throw error;
    }
    return this.ready(run, lease);
  }

  /**
   * Continues a stored run here: a background run handed over by the API replica that accepted
   * it, a suspended run resumed, or a run whose holder died (its lease expired). Takes the
   * session's lease over (see {@link adoptSessionLease}; `exclusive`: only a lease that expired,
   * so a run whose holder lives is never taken twice); `state` says where the run stands when
   * it is more than what is stored (a takeover reads the run log). `null` when the run is not
   * `running`, cannot be continued (stored before its state was) or its lease is held.
   */
  async adopt(
    runId: string,
    options: { exclusive: boolean; state?: (stored: StoredRun) => Promise<RunState> },
  ): Promise<PreparedRun | null> {
    const stored = await this.runs.load(runId);
    if (!stored || stored.status !== 'running' || !stored.request || !stored.state) return null;
    const lease = await (options.exclusive ? acquireSessionLease : adoptSessionLease)(
      this.options.ephemeral,
      stored.userId,
      stored.sessionId,
      runId,
      this.settings.leaseTtlMs,
      (error) => this.options.logger.warn({ err: error, runId }, 'lease renewal failed'),
    );
    if (!lease) return null;
    try {
      const state = options.state ? await options.state(stored) : stored.state;
      return this.ready({ ...stored, request: stored.request, state }, lease);
    } catch (error) {
      await lease.release();
      throw error;
    }
  }

  private ready(
    run: { runId: string; sessionId: string; userId: string; request: RunRequest; state: RunState },
    lease: SessionLease,
    behind:
      | {
          written: Promise<void>;
          freshSession: boolean;
          leased?: Promise<void>;
          openingStored?: boolean;
        }
      | undefined = undefined,
  ): PreparedRun {
    const { runId, sessionId, userId, request, state } = run;
    return {
      userId,
      sessionId,
      runId,
      lastSeq: state.lastSeq,
      execute: async (emit, signal, host = {}) => {
        const ended = this.options.metrics?.runStarted(request.mode);
        let result: RunResult | undefined;
        try {
          return (result = await executeRun({
            ...this.options,
            settings: this.settings,
            sessions: this.sessions,
            run: {
              userId,
              sessionId,
              runId,
              request,
              signal,
              ...(host.suspend ? { suspend: host.suspend } : {}),
            },
            ...(state.lastSeq > 0 ? { resume: state } : {}),
            ...behind,
            emit,
            ...(host.durable ? { durable: host.durable } : {}),
            recordTurn: (assistant, step) =>
              recordTurn(this.options.ephemeral, runId, step, assistant),
            forgetTurn: async () => {
              await deleteTurnRecords(this.options.ephemeral, [runId]);
            },
            release: (holdMs) => (holdMs === undefined ? lease.release() : lease.handOver(holdMs)),
          }));
        } finally {
          ended?.(result?.status ?? 'error');
          await lease.release().catch(() => undefined);
        }
      },
      cancel: async () => {
        await behind?.written.catch(() => undefined);
        await this.sessions.finishRun(runId, 'aborted', 'run_aborted').catch(() => undefined);
        await deleteTurnRecords(this.options.ephemeral, [runId]).catch(() => undefined);
        await lease.release();
      },
      handOver: () => lease.handOver(this.settings.leaseTtlMs),
    };
  }
}

/** The first messages of a session new with the run: the client's history, the user message. */
function openingMessages(request: RunRequest, settings: AgentSettings): ChatMessage[] {
  return [
    ...request.history.map((m) => ({ role: m.role, content: m.content }) as ChatMessage),
    userMessage(request.message, request.attachments, settings.limits),
  ];
}
