/**
 * How many finished jobs of one queue are kept, and for how long. A kept job's id still
 * deduplicates `add`; past either bound the job is deleted, so its id may be added (and run)
 * again. Both bounds hold at once: a job goes when it is older than `ageMs` or when `count`
 * newer jobs of the same outcome finished after it.
 *
 * Trimming happens when a job of the same outcome finishes (BullMQ's `removeOnComplete` /
 * `removeOnFail`; the in-process adapter does the same), not on a timer: a queue that stops
 * finishing jobs keeps the last ones it finished, at most `count` of them.
 */
export interface JobRetention {
  /** Finished jobs older than this are deleted (BullMQ counts in whole seconds, rounded up). */
  ageMs: number;
  /** At most this many finished jobs are kept per queue (the newest). */
  count: number;
}

/** Kept jobs per outcome. */
export interface JobRetentionPolicy {
  completed: JobRetention;
  failed: JobRetention;
}

/**
 * One day and 1,000 jobs per queue for completed jobs; a week and 5,000 for failed ones, which
 * are kept longer for inspection in the queue dashboard. Without the counts, a busy queue kept a
 * day of jobs: +500 Redis keys a minute in the soak (docs/RELIABILITY.md).
 */
export const DEFAULT_JOB_RETENTION: JobRetentionPolicy = Object.freeze({
  completed: Object.freeze({ ageMs: 86_400_000, count: 1_000 }),
  failed: Object.freeze({ ageMs: 7 * 86_400_000, count: 5_000 }),
});

/** Fills the bounds a caller left out from {@link DEFAULT_JOB_RETENTION}. */
export function jobRetention(partial?: {
  completed?: Partial<JobRetention>;
  failed?: Partial<JobRetention>;
}): JobRetentionPolicy {
  const policy = {
    completed: { ...DEFAULT_JOB_RETENTION.completed, ...partial?.completed },
    failed: { ...DEFAULT_JOB_RETENTION.failed, ...partial?.failed },
  };
  for (const [outcome, bound] of Object.entries(policy)) {
    if (!Number.isInteger(bound.count) || bound.count < 0)
      throw new Error(`job retention: ${outcome}.count must be an integer >= 0`);
    if (!Number.isFinite(bound.ageMs) || bound.ageMs < 0)
      throw new Error(`job retention: ${outcome}.ageMs must be >= 0`);
  }
  return policy;
}
