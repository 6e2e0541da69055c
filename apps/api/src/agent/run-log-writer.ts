import type { RunLog } from '@agent-backend/run-log';

/** An event of a run with its position, as sent and as logged. */
export interface SequencedEvent {
  readonly seq: number;
  readonly data: string;
  readonly final: boolean;
}

/**
 * Copies a run's events into the run log in order, batching whatever accumulated while the
 * previous append was in flight (a streamed answer produces many small events; one round trip
 * per batch instead of one per token). A failed append is reported once and the run goes on:
 * only resuming on another replica depends on the log.
 */
export class RunLogWriter {
  private pending: SequencedEvent[] = [];
  private flushing: Promise<void> = Promise.resolve();
  private scheduled = false;
  private failed = false;

  constructor(
    private readonly log: RunLog,
    private readonly runId: string,
    private readonly onError: (error: unknown) => void,
  ) {}

  push(entry: SequencedEvent): void {
    this.pending.push(entry);
    if (this.scheduled) return;
    this.scheduled = true;
    this.flushing = this.flushing.then(() => this.flush());
  }

  /** Resolves when everything pushed so far is in the log (or failed). */
  drained(): Promise<void> {
    return this.flushing;
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0 || this.failed) return;
    try {
      await this.log.append(
        this.runId,
        batch.map((e) =>
          e.final ? { seq: e.seq, data: e.data, final: true } : { seq: e.seq, data: e.data },
        ),
      );
    } catch (error) {
      this.failed = true;
      this.onError(error);
    }
  }
}
