/**
 * The job port (sketch; the worker issue implements it with BullMQ and in-process timers).
 *
 * In the contract as planned:
 * - Delivery is at-least-once: a job whose worker dies mid-run is retried, so handlers are
 *   idempotent (keyed by `jobId`, and by an occurrence key for scheduled runs).
 * - `add` with a `jobId` that already exists is a no-op, which makes enqueueing idempotent too.
 * - A schedule is upserted by id: adding it again replaces its timing and its job template.
 * - Job data is JSON and validated with a shared schema by the processor before it runs.
 * - `close()` stops taking jobs, lets running handlers finish (bounded), then disconnects.
 */
export interface JobQueue {
  add(queue: string, data: unknown, options?: AddJobOptions): Promise<{ jobId: string }>;
  /** Registers the handler of `queue`; only worker processes call it. */
  process(queue: string, handler: JobHandler, options?: { concurrency?: number }): Promise<void>;
  upsertSchedule(queue: string, scheduleId: string, timing: ScheduleTiming, data: unknown): Promise<void>;
  /** @returns whether a schedule existed. */
  removeSchedule(queue: string, scheduleId: string): Promise<boolean>;
  close(): Promise<void>;
}

export interface AddJobOptions {
  /** Idempotency key: a second add with the same id is ignored. */
  jobId?: string;
  /** Run no earlier than this many ms from now. */
  delayMs?: number;
  /** Attempts before the job is marked failed. @default 3 */
  attempts?: number;
}

export type ScheduleTiming =
  /** One run at an instant (epoch ms). */
  | { kind: 'once'; at: number }
  /** A cron pattern evaluated in an IANA time zone (daylight-saving aware). */
  | { kind: 'cron'; pattern: string; tz: string };

export interface JobContext {
  jobId: string;
  /** 1 on the first attempt. */
  attempt: number;
  /** Aborted when the worker shuts down or the job's lock is lost. */
  signal: AbortSignal;
}

export type JobHandler = (data: unknown, context: JobContext) => Promise<unknown>;
