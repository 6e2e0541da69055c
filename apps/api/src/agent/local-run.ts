import { AgentRunError, type PreparedRun } from '@agent-backend/agent-runtime';
import type { AgentEvent } from '@agent-backend/protocol';
import type { RunLogWriter, SequencedEvent } from './run-log-writer.js';

/** Ends a stream: `done` and `error` are the last event of a run. */
export const isFinal = (event: AgentEvent): boolean =>
  event.type === 'done' || event.type === 'error';

/** A prepared run and how this replica publishes and supervises it. */
export interface LocalRunOptions {
  readonly prepared: PreparedRun;
  readonly writer: RunLogWriter;
  /** How long the run outlives its last client. */
  readonly graceMs: number;
  /** Whether a client on another replica follows the run (its marker in the ephemeral store). */
  remoteAttached(runId: string): Promise<boolean>;
  onError(error: unknown): void;
}

/**
 * A run executing on this replica: its events in memory (for the clients attached here) and in
 * the run log (for resumes anywhere), and the rule that a run nobody watches stops.
 *
 * Clients attach and detach; when the last local client detaches the grace timer starts, and
 * when it fires with no local client and no remote one (a resume on another replica keeps a
 * marker fresh), the run is aborted with `run_aborted`, which aborts the model request and the
 * tool loop. While a remote client is attached the check repeats every grace period.
 */
export class LocalRun {
  readonly runId: string;
  readonly sessionId: string;
  readonly events: SequencedEvent[] = [];
  readonly finished: Promise<void>;
  private readonly controller = new AbortController();
  private readonly waiters = new Set<() => void>();
  private attached = 0;
  private grace: NodeJS.Timeout | undefined;
  private done = false;

  constructor(private readonly options: LocalRunOptions) {
    this.runId = options.prepared.runId;
    this.sessionId = options.prepared.sessionId;
    this.finished = options.prepared
      .execute((event) => this.emit(event), this.controller.signal)
      .then(() => undefined, options.onError)
      .finally(() => {
        this.done = true;
        clearTimeout(this.grace);
        this.wake();
      });
  }

  /** Stops the run; `reason` gives the final `error` event its code. */
  abort(reason: AgentRunError): void {
    if (!this.controller.signal.aborted) this.controller.abort(reason);
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

  /** Resolves when a new event arrived, the run finished, or `signal` aborted. */
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
    const entry = {
      seq: this.events.length + 1,
      data: JSON.stringify(event),
      final: isFinal(event),
    };
    this.events.push(entry);
    this.options.writer.push(entry);
    this.wake();
  }

  private wake(): void {
    for (const wake of [...this.waiters]) wake();
  }

  private startGrace(): void {
    clearTimeout(this.grace);
    this.grace = setTimeout(() => {
      void this.checkAbandoned();
    }, this.options.graceMs);
    this.grace.unref();
  }

  private async checkAbandoned(): Promise<void> {
    if (this.done || this.attached > 0) return;
    const remote = await this.options.remoteAttached(this.runId).catch(() => false);
    if (this.done || this.attached > 0) return;
    if (remote) return this.startGrace();
    this.abort(
      new AgentRunError('run_aborted', 'the run was cancelled: no client stayed connected'),
    );
  }
}
