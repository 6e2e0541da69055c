/**
 * The job port: queues, delayed jobs and schedules, with an in-process adapter (one process,
 * timers) and a BullMQ adapter (replicas sharing Redis).
 *
 * In the contract:
 * - Delivery is at-least-once: a job whose worker dies mid-run is delivered again (BullMQ: once
 *   its lock expires and the stalled-job check runs), so handlers must be idempotent. Scheduled
 *   jobs carry `scheduleId` and `scheduledAt` (the occurrence instant), which together name the
 *   occurrence; handlers key their side effects on it.
 * - One job per occurrence: with several worker replicas, each occurrence of a schedule becomes
 *   exactly one job (its id is derived from the schedule id and the instant), delivered to one
 *   handler at a time.
 * - `add` with a `jobId` that is still known (waiting, delayed, running, or retained after it
 *   finished) is a no-op, which makes enqueueing idempotent within that retention. Finished jobs
 *   are retained by age and by count per queue (`JobRetention`): past either, an id may be
 *   added and run again, so a handler whose work must happen once per id keeps its own record
 *   (chat messages: the inbox; scheduled runs: the run rows).
 * - A schedule is upserted by id: adding it again replaces its timing and its job template.
 *   A `once` schedule in the past fires at once; a finished `once` schedule is gone.
 * - Cron occurrences are computed by {@link nextCronOccurrence} in both adapters (BullMQ gets it
 *   as its `repeatStrategy`), so both fire at the same instants, daylight-saving edges included.
 * - Job data is JSON; the processor validates it with a shared schema before it runs.
 * - `close()` stops taking jobs, aborts the handlers' signals, lets them finish (bounded), then
 *   disconnects. Methods called after `close()` reject with `JobQueueClosedError`.
 *
 * Not in the contract: ordering between jobs, exactly-once execution of handler code (only of
 * job creation), cron granularity below one second.
 */
export interface JobQueue {
  /** Enqueues one job. Queue names and ids must not be empty. */
  add(queue: string, data: unknown, options?: AddJobOptions): Promise<{ jobId: string }>;
  /**
   * Registers the handler of `queue`; only worker processes call it. A handler that throws is
   * retried up to `attempts` times; one that throws {@link UnrecoverableJobError} is not.
   */
  process(queue: string, handler: JobHandler, options?: ProcessOptions): Promise<void>;
  /**
   * Stops this process taking jobs of `queue` (a draining worker): from the call on, no job
   * reaches its handler here; jobs it runs go on, the others wait for another process's
   * handler. Not undone: a paused process is shutting down.
   */
  pause(queue: string): Promise<void>;
  upsertSchedule(
    queue: string,
    scheduleId: string,
    timing: ScheduleTiming,
    data: unknown,
  ): Promise<void>;
  /** @returns whether a schedule existed. */
  removeSchedule(queue: string, scheduleId: string): Promise<boolean>;
  /**
   * Removes the jobs of `queue` that are not running and whose data `match`es: waiting, delayed
   * and waiting for a retry, and the finished ones an adapter keeps with their data (BullMQ's
   * completed and failed jobs; the in-process adapter keeps only finished ids) (a user's data
   * erased). A running job is left to finish; schedules are removed with {@link removeSchedule}.
   * @returns how many jobs were removed.
   */
  removeJobs(queue: string, match: (data: unknown) => boolean): Promise<number>;
  /** Ids of the schedules of `queue` that have a future occurrence (for reconciliation, tests). */
  listSchedules(queue: string): Promise<string[]>;
  close(): Promise<void>;
}

export interface AddJobOptions {
  /** Idempotency key: a second add with the same id is ignored. */
  jobId?: string;
  /** Run no earlier than this many ms from now. @default 0 */
  delayMs?: number;
  /** Attempts before the job is marked failed. @default 3 */
  attempts?: number;
}

export interface ProcessOptions {
  /** Jobs of this queue run at once in this process. @default 1 */
  concurrency?: number;
}

export type ScheduleTiming =
  /** One run at an instant (epoch ms). */
  | { kind: 'once'; at: number }
  /**
   * A cron pattern (5 fields, or 6 with seconds first) evaluated in an IANA time zone, so
   * daylight-saving changes move the UTC instant, not the wall-clock time. No occurrence before
   * `startDate` or after `endDate` (epoch ms).
   */
  | { kind: 'cron'; pattern: string; tz: string; startDate?: number; endDate?: number };

export interface JobContext {
  jobId: string;
  /** 1 on the first attempt. */
  attempt: number;
  /** How many attempts the job has in all: `attempt === attempts` is its last. */
  attempts: number;
  /** Aborted when the worker shuts down. */
  signal: AbortSignal;
  /** The schedule that made this job, for scheduled jobs. */
  scheduleId?: string;
  /** The occurrence instant (epoch ms) of a scheduled job. */
  scheduledAt?: number;
}

export type JobHandler = (data: unknown, context: JobContext) => Promise<unknown>;

/** Thrown by a handler to fail the job at once, without the remaining attempts. */
export class UnrecoverableJobError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnrecoverableJobError';
  }
}

/** Raised when a closed job queue is used. */
export class JobQueueClosedError extends Error {
  constructor() {
    super('job queue is closed');
    this.name = 'JobQueueClosedError';
  }
}

/**
 * Attempts of a job unless the caller says otherwise. With the exponential backoff from
 * {@link RETRY_BASE_DELAY_MS} the retries span about two minutes (1 + 2 + … + 64 s), so a Redis
 * or PostgreSQL outage shorter than that loses no job. Three attempts (3 s) lost every chat
 * message and scheduled run caught by a 5 s PostgreSQL outage (tests/faults).
 */
export const DEFAULT_ATTEMPTS = 8;
/** First retry delay; doubled on each further attempt (both adapters). */
export const RETRY_BASE_DELAY_MS = 1_000;
