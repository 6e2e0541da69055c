import type { RunLog } from './run-log.js';

/** An event of a run with its position, as sent and as logged. */
export interface SequencedEvent {
  readonly seq: number;
  readonly data: string;
  readonly final: boolean;
}

/** Appends of one writer in flight at once (see {@link RunLogWriter}). */
export const MAX_IN_FLIGHT = 2;

/**
 * Copies a run's events into the run log in order, in batches (a streamed answer produces many
 * small events). A batch is sent at once while fewer than {@link MAX_IN_FLIGHT} appends are in
 * flight (on Redis they share the connection, in order: the first answer chunk does not wait
 * behind the `session` event's round trip); beyond that, events accumulate until one returns,
 * so a fast stream costs few appends. Each batch names the entry it must follow (`after`): when
 * an earlier one failed, the later ones store nothing, so the log never has a gap. A failed
 * append is reported once and the run goes on: only resuming on another replica depends on
 * the log.
 *
 * `durableSeq` is the last event known to be in the log (every event once an append failed, so
 * that the run's own clients are not held back): a replica sends its clients only events up
 * to it, so a run taken over after a crash never reuses an event id a client has seen.
 */
export class RunLogWriter {
  private inFlight = 0;
  private pending: SequencedEvent[] = [];
  private flushing: Promise<void> = Promise.resolve();
  private scheduled = false;
  private failed = false;
  private durable = 0;
  private last = 0;
  /** The last event sent to the log (acknowledged or not); undefined before the first. */
  private sent: number | undefined;

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
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= MAX_IN_FLIGHT || this.pending.length === 0) return;
    this.scheduled = true;
    queueMicrotask(() => this.flush());
  }

  /** Resolves when everything pushed so far is in the log (or failed). */
  async drained(): Promise<void> {
    // Events not sent yet go with the next batch, once one is scheduled or an append returns.
    while (this.pending.length > 0 || this.scheduled) {
      const flushing = this.flushing;
      await (this.scheduled ? Promise.resolve() : flushing);
      if (this.failed) return;
    }
    await this.flushing;
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0 || this.failed) return;
    // The first batch of this writer follows whatever the log holds (a run continued here
    // after another holder); every later one follows the batch before it.
    const after = this.sent;
    this.sent = batch.at(-1)!.seq;
    // The batch that ends the run shares its write with what `withFinal` sends, when given.
    const withFinal = batch.at(-1)!.final ? this.withFinal : undefined;
    let appended: Promise<void>;
    try {
      appended = this.log.append(
        this.runId,
        batch.map((e) =>
          e.final ? { seq: e.seq, data: e.data, final: true } : { seq: e.seq, data: e.data },
        ),
        { after, withTurn: withFinal !== undefined },
      );
    } catch (error) {
      appended = Promise.reject(error);
    }
    withFinal?.();
    this.inFlight++;
    const outcome = appended.then(
      () => undefined,
      (error: unknown) => ({ error }),
    );
    void outcome.then(() => {
      this.inFlight--;
      this.schedule();
    });
    const previous = this.flushing;
    this.flushing = (async () => {
      const result = await outcome;
      await previous;
      // An earlier batch failed: reported then, and this one stored nothing after it.
      if (this.failed) return;
      if (result) {
        this.failed = true;
        this.onError(result.error);
      } else {
        this.durable = batch.at(-1)!.seq;
      }
      this.onDurable(this.durableSeq);
    })();
  }
}
