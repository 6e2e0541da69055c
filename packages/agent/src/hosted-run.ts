import {
  AgentRunError,
  RunHandOver,
  type PreparedRun,
  type RunResult,
} from '@agent-backend/agent-runtime';
import type { AgentEvent, SuspendedApproval } from '@agent-backend/protocol';
import { RunLogWriter, type RunLog, type SequencedEvent } from '@agent-backend/run-log';

/** Marker saying a client follows `runId` through the run log, from any replica. */
export const remoteAttachKey = (runId: string) => `agent:run-attached:${runId}`;

/** Whether a logged event's data is a `suspended` event (it ends a client's stream, not the run). */
export const isSuspendedData = (data: string): boolean => data.startsWith('{"type":"suspended"');

/** An event as a hosted run keeps it: `ends` closes a client's stream (`done`, `error`, `suspended`). */
export interface HostedEvent extends SequencedEvent {
  readonly ends: boolean;
}

/** How a process hosts one run. */
export interface HostedRunOptions {
  readonly prepared: PreparedRun;
  readonly runLog: RunLog;
  /** How long the run outlives its last client before it suspends (or, `abortWhenAbandoned`, stops). */
  readonly graceMs: number;
  /**
   * Suspend a run that has waited this long for approvals even while a client listens
   * (`AGENT_SUSPEND_AFTER_MS`); absent: a listening client keeps the run held.
   */
  readonly suspendAfterMs?: number;
  /**
   * Stop a run no client follows once the grace period passed (an invoke whose client left:
   * `run_aborted`). Otherwise (background, resumed, taken-over runs) it goes on.
   */
  readonly abortWhenAbandoned: boolean;
  /** Whether a client follows the run from the run log (see {@link remoteAttachKey}). */
  remoteAttached(runId: string): Promise<boolean>;
  /** After the run suspended: schedules its approvals' timeouts (a delayed job each). */
  onSuspended(approvals: readonly SuspendedApproval[]): Promise<void>;
  onError(error: unknown): void;
  onLogError(error: unknown): void;
  /**
   * Sent with the append of the run's last event (`done` or `error`), in the same tick, so on
   * Redis it shares that event's round trip: the run's slots are freed here. Not called when
   * the run ends otherwise (suspended, handed over, run log failing); whoever holds the slots
   * frees them when `finished` settles as well (a second release does nothing).
   */
  withFinalEvent?(): void;
}

/**
 * A run executing in this process: its events in memory (for clients attached here) and in the
 * run log (for clients anywhere and for a takeover), sent to clients only once in the log, and
 * the rules that end this process's hold on it: a run nobody follows suspends when it waits
 * for approvals (or stops, `abortWhenAbandoned`), a run waiting `suspendAfterMs` suspends, and
 * {@link suspendIfWaiting} (a drain) suspends it.
 */
export class HostedRun {
  readonly runId: string;
  readonly sessionId: string;
  /** Events of this hold, the first one numbered `firstSeq + 1`. */
  readonly events: HostedEvent[] = [];
  readonly firstSeq: number;
  readonly finished: Promise<RunResult | undefined>;
  /** Why it suspended, once it did. */
  suspendedBy: 'client_left' | 'waited' | 'drain' | undefined;
  private readonly controller = new AbortController();
  private readonly suspendController = new AbortController();
  private readonly writer: RunLogWriter;
  private readonly waiters = new Set<() => void>();
  private readonly pending = new Set<string>();
  private attached = 0;
  private grace: NodeJS.Timeout | undefined;
  private waited: NodeJS.Timeout | undefined;
  private done = false;
  private durable: number;

  constructor(private readonly options: HostedRunOptions) {
    const { prepared } = options;
    this.runId = prepared.runId;
    this.sessionId = prepared.sessionId;
    this.firstSeq = prepared.lastSeq;
    this.durable = prepared.lastSeq;
    this.writer = new RunLogWriter(
      options.runLog,
      this.runId,
      options.onLogError,
      (seq) => {
        this.durable = seq;
        this.wake();
      },
      options.withFinalEvent && (() => options.withFinalEvent?.()),
    );
    this.finished = prepared
      .execute((event) => this.emit(event), this.controller.signal, {
        suspend: this.suspendController.signal,
        durable: () => this.writer.drained(),
      })
      .then(async (result) => {
        if (result.status === 'suspended') await this.afterSuspend();
        return result;
      })
      .catch((error: unknown) => {
        options.onError(error);
        return undefined;
      })
      .finally(async () => {
        await this.writer.drained();
        this.done = true;
        clearTimeout(this.grace);
        clearTimeout(this.waited);
        this.wake();
      });
    if (options.graceMs > 0) this.startGrace();
  }

  /** Stops the run; `reason` gives the final `error` event its code. */
  abort(reason: AgentRunError): void {
    if (!this.controller.signal.aborted) this.controller.abort(reason);
  }

  /**
   * Lets go of the run without ending it (see `RunHandOver`): it stays `running`, its lease is
   * released once its events are in the run log, and `finished` resolves `handed_over`.
   */
  handOver(): void {
    if (!this.controller.signal.aborted) this.controller.abort(new RunHandOver());
  }

  /** Suspends the run when calls wait for approvals (a drain); `true` when it will. */
  suspendIfWaiting(): boolean {
    if (this.pending.size === 0 || this.done) return false;
    this.suspend('drain');
    return true;
  }

  /** Whether calls wait for approvals now. */
  get waiting(): boolean {
    return this.pending.size > 0;
  }

  attach(): void {
    this.attached++;
    clearTimeout(this.grace);
    this.grace = undefined;
  }

  detach(): void {
    this.attached = Math.max(0, this.attached - 1);
    if (this.attached === 0 && !this.done) this.startGrace();
  }

  /** The last event a client may be sent: the last one in the run log. */
  get sendableSeq(): number {
    return this.done ? this.firstSeq + this.events.length : this.durable;
  }

  /** Resolves when a new event became sendable, the run finished, or `signal` aborted. */
  changed(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (this.done || signal.aborted) return resolve();
      const wake = () => {
        this.waiters.delete(wake);
        signal.removeEventListener('abort', wake);
        resolve();
      };
      this.waiters.add(wake);
      signal.addEventListener('abort', wake, { once: true });
    });
  }

  get isDone(): boolean {
    return this.done;
  }

  private emit(event: AgentEvent): void {
    if (event.type === 'approval_request') this.approvalRequested(event.request_id);
    if (event.type === 'approval_result') this.pending.delete(event.request_id);
    const final = event.type === 'done' || event.type === 'error';
    const entry: HostedEvent = {
      seq: this.firstSeq + this.events.length + 1,
      data: JSON.stringify(event),
      final,
      ends: final || event.type === 'suspended',
    };
    this.events.push(entry);
    this.writer.push(entry);
  }

  private approvalRequested(requestId: string): void {
    this.pending.add(requestId);
    const after = this.options.suspendAfterMs;
    if (after !== undefined && !this.waited) {
      this.waited = setTimeout(() => {
        this.waited = undefined;
        if (this.pending.size > 0) this.suspend('waited');
      }, after);
      this.waited.unref();
    }
    // Nobody follows the run here: the grace period decides (again) once it waits.
    if (this.attached === 0 && !this.grace) this.startGrace();
  }

  private suspend(reason: NonNullable<HostedRun['suspendedBy']>): void {
    this.suspendedBy ??= reason;
    if (!this.suspendController.signal.aborted) this.suspendController.abort();
  }

  private async afterSuspend(): Promise<void> {
    const last = this.events.at(-1);
    if (!last || !isSuspendedData(last.data)) return;
    const event = JSON.parse(last.data) as { approvals: SuspendedApproval[] };
    await this.options.onSuspended(event.approvals);
  }

  private wake(): void {
    for (const wake of [...this.waiters]) wake();
  }

  private startGrace(): void {
    clearTimeout(this.grace);
    this.grace = setTimeout(() => {
      this.grace = undefined;
      void this.checkAbandoned();
    }, this.options.graceMs);
    this.grace.unref();
  }

  private async checkAbandoned(): Promise<void> {
    if (this.done || this.attached > 0) return;
    const remote = await this.options.remoteAttached(this.runId).catch(() => false);
    if (this.done || this.attached > 0) return;
    if (remote) return this.startGrace();
    if (this.pending.size > 0) return this.suspend('client_left');
    if (this.options.abortWhenAbandoned) {
      this.abort(
        new AgentRunError('run_aborted', 'the run was cancelled: no client stayed connected'),
      );
    }
  }
}
