import type { RunLog } from './run-log.js';

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
 *
 * `durableSeq` is the last event known to be in the log (every event once an append failed, so
 * that the run's own clients are not held back): a replica sends its clients only events up
 * to it, so a run taken over after a crash never reuses an event id a client has seen.
 */
export class RunLogWriter {
  private pending: SequencedEvent[] = [];
  private flushing: Promise<void> = Promise.resolve();
  private scheduled = false;
  private failed = false;
  private durable = 0;
  private last = 0;

  constructor(
    private readonly log: RunLog,
    private readonly runId: string,
    private readonly onError: (error: unknown) => void,
    /** Told each time `durableSeq` moved. */
    private readonly onDurable: (seq: number) => void = () => {},
    /**
     * Called once, in the same tick as the append of the batch holding the final entry is
     * issued: what it sends on the run log's connection (auto-pipelined) shares that write.
     */
    private readonly withFinal?: () => void,
  ) {}

  /** The last event in the log (see the class comment). */
  get durableSeq(): number {
    return this.failed ? this.last : this.durable;
  }

  push(entry: SequencedEvent): void {
    this.last = entry.seq;
    if (this.failed) return this.onDurable(entry.seq);
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
      const appended = this.log.append(
        this.runId,
        batch.map((e) =>
          e.final ? { seq: e.seq, data: e.data, final: true } : { seq: e.seq, data: e.data },
        ),
      );
      if (batch.at(-1)!.final) this.withFinal?.();
      await appended;
      this.durable = batch.at(-1)!.seq;
    } catch (error) {
      this.failed = true;
      this.onError(error);
    }
    this.onDurable(this.durableSeq);
  }
}
