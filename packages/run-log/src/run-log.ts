/**
 * The run log port: every event of one agent run, in order, readable from any replica for a
 * retention window, so a client whose SSE stream dropped can resume it (`Last-Event-ID`) on
 * whichever API replica the load balancer picks.
 *
 * In the contract:
 * - One writer per run (the replica running it) appends entries with `seq` 1, 2, 3, ... in
 *   order; an entry whose `seq` is not greater than the run's last one rejects with
 *   {@link RunLogSequenceError} and is not stored. An entry may be marked `final` (the run
 *   ended); readers following the run stop after it.
 * - Every append keeps the whole run for `retentionMs` from that moment; after that the run is
 *   gone for every reader (`info` is null, `read` yields nothing).
 * - `read` yields the entries with `seq > afterSeq` in order. With `follow` it then waits for
 *   new ones, and ends after a `final` entry, when `signal` aborts, when nothing arrived for
 *   `idleTimeoutMs` (a writer that died never writes `final`), or on `close()`.
 * - Values are strings (callers encode JSON); they round-trip byte for byte.
 * - `delete` forgets runs at once, as their expiry would (a following reader ends); deleting an
 *   unknown run is no error.
 * - After `close()` every method rejects with {@link RunLogClosedError} and following readers
 *   end; `close()` is idempotent.
 *
 * Not in the contract: durability (a Redis restart may lose runs; the conversation itself is in
 * the durable store), a bound on a run's size, several writers for one run.
 */
export interface RunLog {
  /**
   * Appends `entries` (non-empty, increasing `seq`) to the run and restarts its retention. With
   * `options.after`, only when the run's last entry is that one (0: the run has none), else it
   * rejects with {@link RunLogSequenceError} storing nothing: a writer that sends its next batch
   * before the previous one was acknowledged never leaves a gap when that one failed.
   */
  append(runId: string, entries: readonly RunLogEntry[], options?: AppendOptions): Promise<void>;
  /** The run's last `seq` and whether it ended; null when the run is unknown or expired. */
  info(runId: string): Promise<RunLogInfo | null>;
  read(runId: string, options: ReadOptions): AsyncIterable<RunLogEntry>;
  /**
   * Forgets the runs at once (a user's data erased); following reads of them end. Unknown or
   * expired runs are skipped. @returns how many runs were stored.
   */
  delete(runIds: readonly string[]): Promise<number>;
  close(): Promise<void>;
}

/** How an append checks where the run stands. */
export interface AppendOptions {
  /** The `seq` the run's last entry must have (0: none), or the append stores nothing. */
  readonly after?: number;
  /**
   * The append may wait for the end of the current turn of the event loop, to share one write
   * with what the caller sends right after it (Redis: the connection's auto-pipeline). By
   * default it goes out at once: a client waits for each event until it is in the log.
   */
  readonly withTurn?: boolean;
}

/** One event of a run, as stored. */
export interface RunLogEntry {
  /** Position in the run, from 1. */
  readonly seq: number;
  readonly data: string;
  /** The run's last entry. */
  readonly final?: boolean;
}

/** What `info` knows about a run. */
export interface RunLogInfo {
  readonly lastSeq: number;
  readonly final: boolean;
}

/** How `read` reads a run. */
export interface ReadOptions {
  /** Yield only entries after this one; 0 for the whole run. @default 0 */
  afterSeq?: number;
  /** Keep waiting for new entries until a `final` one. @default false */
  follow?: boolean;
  /** With `follow`: end when no entry arrived for this long. @default 30_000 */
  idleTimeoutMs?: number;
  /** Ends the read (the iterator returns; it does not throw). */
  signal?: AbortSignal;
}

/** Options of both adapters. */
export interface RunLogOptions {
  /** How long a run stays readable after its last append. @default 600_000 (10 minutes) */
  retentionMs?: number;
}

/** @see RunLogOptions.retentionMs */
export const DEFAULT_RUN_LOG_RETENTION_MS = 600_000;
/** @see ReadOptions.idleTimeoutMs */
export const DEFAULT_RUN_LOG_IDLE_TIMEOUT_MS = 30_000;
