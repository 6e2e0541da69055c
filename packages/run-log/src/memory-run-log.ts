import {
  type AppendOptions,
  DEFAULT_RUN_LOG_IDLE_TIMEOUT_MS,
  DEFAULT_RUN_LOG_RETENTION_MS,
  type ReadOptions,
  type RunLog,
  type RunLogEntry,
  type RunLogInfo,
  type RunLogOptions,
} from './run-log.js';
import { RunLogClosedError, RunLogSequenceError, checkBatch, checkRetention } from './errors.js';
import { waitForSignal } from './wait.js';

interface StoredRun {
  readonly entries: RunLogEntry[];
  expiry: NodeJS.Timeout;
  /** Woken on every append, expiry and close. */
  readonly waiters: Set<() => void>;
}

/**
 * The embedded run log: runs in a map, each dropped by an (unref'd) timer `retentionMs` after
 * its last append. Readers of one process only, which is all the embedded engine has.
 */
class MemoryRunLog implements RunLog {
  private readonly runs = new Map<string, StoredRun>();
  private readonly readers = new Set<() => void>();
  private closed = false;

  constructor(private readonly retentionMs: number) {}

  async append(
    runId: string,
    entries: readonly RunLogEntry[],
    options: AppendOptions = {},
  ): Promise<void> {
    this.assertOpen();
    const run = this.runs.get(runId);
    const lastSeq = run?.entries.at(-1)?.seq ?? 0;
    if (options.after !== undefined && options.after !== lastSeq && entries[0]) {
      throw new RunLogSequenceError(runId, entries[0].seq, lastSeq);
    }
    checkBatch(runId, entries, lastSeq);
    const stored = run ?? { entries: [], expiry: undefined!, waiters: new Set<() => void>() };
    if (!run) this.runs.set(runId, stored);
    clearTimeout(stored.expiry);
    stored.expiry = setTimeout(() => this.expire(runId), this.retentionMs).unref();
    for (const entry of entries) stored.entries.push({ ...entry });
    for (const wake of stored.waiters) wake();
  }

  async info(runId: string): Promise<RunLogInfo | null> {
    this.assertOpen();
    const last = this.runs.get(runId)?.entries.at(-1);
    return last ? { lastSeq: last.seq, final: last.final === true } : null;
  }

  read(runId: string, options: ReadOptions): AsyncIterable<RunLogEntry> {
    return this.iterate(runId, options);
  }

  private async *iterate(runId: string, options: ReadOptions): AsyncGenerator<RunLogEntry> {
    this.assertOpen();
    let after = options.afterSeq ?? 0;
    const idleMs = options.idleTimeoutMs ?? DEFAULT_RUN_LOG_IDLE_TIMEOUT_MS;
    for (;;) {
      const run = this.runs.get(runId);
      const fresh = run?.entries.filter((entry) => entry.seq > after) ?? [];
      for (const entry of fresh) {
        yield { ...entry };
        after = entry.seq;
        if (entry.final) return;
      }
      if (!options.follow || this.closed || options.signal?.aborted) return;
      // Entries appended while the consumer held the ones above are read before waiting.
      const last = run?.entries.at(-1);
      if (last && last.seq > after) continue;
      if (last?.final) return;
      const woke = await this.waitForAppend(runId, idleMs, options.signal);
      if (!woke) return;
    }
  }

  /** Resolves true on an append to the run, false on idle timeout, abort, expiry or close. */
  private waitForAppend(runId: string, idleMs: number, signal?: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      const run = this.runs.get(runId);
      let settled = false;
      const finish = (woke: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        run?.waiters.delete(onAppend);
        this.readers.delete(onClose);
        stopWaiting();
        resolve(woke);
      };
      const onAppend = () => finish(this.runs.has(runId));
      const onClose = () => finish(false);
      const timer = setTimeout(() => finish(false), idleMs);
      const stopWaiting = waitForSignal(signal, () => finish(false));
      this.readers.add(onClose);
      if (run) run.waiters.add(onAppend);
      else this.pendingWaiter(runId, onAppend);
    });
  }

  /** A reader waiting for a run that has no entry yet is woken by its first append. */
  private pendingWaiter(runId: string, wake: () => void): void {
    const stored: StoredRun = {
      entries: [],
      expiry: setTimeout(() => this.expire(runId), this.retentionMs).unref(),
      waiters: new Set([wake]),
    };
    this.runs.set(runId, stored);
  }

  async delete(runIds: readonly string[]): Promise<number> {
    this.assertOpen();
    let deleted = 0;
    for (const runId of runIds) {
      const run = this.runs.get(runId);
      if (!run) continue;
      clearTimeout(run.expiry);
      this.expire(runId);
      deleted += 1;
    }
    return deleted;
  }

  private expire(runId: string): void {
    const run = this.runs.get(runId);
    if (!run) return;
    this.runs.delete(runId);
    for (const wake of run.waiters) wake();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const run of this.runs.values()) clearTimeout(run.expiry);
    this.runs.clear();
    for (const stop of [...this.readers]) stop();
  }

  private assertOpen(): void {
    if (this.closed) throw new RunLogClosedError();
  }
}

/** An in-process {@link RunLog} (the embedded engine, `REDIS_URL` unset). */
export function createMemoryRunLog(options: RunLogOptions = {}): RunLog {
  return new MemoryRunLog(checkRetention(options.retentionMs ?? DEFAULT_RUN_LOG_RETENTION_MS));
}
