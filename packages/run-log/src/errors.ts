/** The run log was closed; every method rejects with this afterwards. */
export class RunLogClosedError extends Error {
  readonly code = 'RUN_LOG_CLOSED';
  constructor() {
    super('the run log is closed');
    this.name = 'RunLogClosedError';
  }
}

/**
 * An append whose `seq` does not continue the run: a second writer, or a bug in the one writer.
 * Nothing of that append is stored.
 */
export class RunLogSequenceError extends Error {
  readonly code = 'RUN_LOG_SEQUENCE';
  constructor(
    readonly runId: string,
    readonly seq: number,
    readonly lastSeq: number,
  ) {
    super(`run ${runId}: entry ${seq} does not follow entry ${lastSeq}`);
    this.name = 'RunLogSequenceError';
  }
}

/** Validates a batch before any of it is written, so both adapters reject the same input. */
export function checkBatch(
  runId: string,
  entries: readonly { seq: number }[],
  lastSeq: number,
): void {
  if (entries.length === 0) throw new RangeError('append needs at least one entry');
  let previous = lastSeq;
  for (const entry of entries) {
    if (!Number.isSafeInteger(entry.seq) || entry.seq <= previous) {
      throw new RunLogSequenceError(runId, entry.seq, previous);
    }
    previous = entry.seq;
  }
}

/** Validates a retention and rounds it up to whole ms, alike for both adapters. */
export function checkRetention(ms: number): number {
  if (!Number.isFinite(ms) || ms <= 0)
    throw new RangeError(`retentionMs must be positive, got ${ms}`);
  return Math.ceil(ms);
}
