import {
  DEFAULT_ATTEMPTS,
  JobQueueClosedError,
  RETRY_BASE_DELAY_MS,
  UnrecoverableJobError,
  type AddJobOptions,
  type JobHandler,
  type JobQueue,
  type ProcessOptions,
  type ScheduleTiming,
} from './job-queue.js';
import { nextCronOccurrence } from './cron.js';
import { occurrenceJobId } from './job-ids.js';
import { jobRetention, type JobRetention } from './job-retention.js';

export interface MemoryJobQueueOptions {
  /** How long `close()` waits for running handlers. @default 10_000 */
  drainTimeoutMs?: number;
  /** Receives handler failures (each attempt) and other background errors. */
  onError?: (error: unknown, info: { queue: string; jobId: string }) => void;
  /** First retry delay, doubled per attempt. @default 1_000 */
  retryBaseDelayMs?: number;
  /**
   * How many finished jobs' ids each queue remembers, and for how long (a remembered id
   * deduplicates `add`), as the BullMQ adapter keeps finished jobs. Bounds left out take
   * `DEFAULT_JOB_RETENTION`'s.
   */
  retention?: { completed?: Partial<JobRetention>; failed?: Partial<JobRetention> };
}

interface Job {
  id: string;
  data: unknown;
  attempts: number;
  attempt: number;
  scheduleId?: string;
  scheduledAt?: number;
}

interface QueueState {
  handler?: JobHandler;
  /** Takes no more jobs (see `JobQueue.pause`). */
  paused: boolean;
  concurrency: number;
  waiting: Job[];
  /** Jobs waiting for their delay or their next attempt, with their timers. */
  delayed: Map<Job, NodeJS.Timeout>;
  running: Set<Promise<void>>;
  /** Ids known to the queue (pending or done), for idempotent `add`. */
  known: Set<string>;
  /** Finished ids still remembered in `known`, oldest first, with when they finished. */
  finished: Record<'completed' | 'failed', Map<string, number>>;
}

interface Schedule {
  timing: ScheduleTiming;
  data: unknown;
  timer?: NodeJS.Timeout;
}

/** setTimeout's limit; longer waits re-arm. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The in-process job adapter of the embedded default: timers and arrays, nothing survives the
 * process (the durable store is the source of truth; the worker reconciles schedules from it at
 * start). Same contract as BullMQ's, including retries with exponential delay and one job per
 * occurrence; there is no other process to hand a stalled job to.
 */
export function createMemoryJobQueue(options: MemoryJobQueueOptions = {}): JobQueue {
  const queues = new Map<string, QueueState>();
  const schedules = new Map<string, Schedule>();
  const timers = new Set<NodeJS.Timeout>();
  const shutdown = new AbortController();
  const retryBase = options.retryBaseDelayMs ?? RETRY_BASE_DELAY_MS;
  const retention = jobRetention(options.retention);
  let closed = false;

  const state = (queue: string): QueueState => {
    if (queue.length === 0) throw new Error('queue names must not be empty');
    let s = queues.get(queue);
    if (!s) {
      s = {
        paused: false,
        concurrency: 1,
        waiting: [],
        delayed: new Map(),
        running: new Set(),
        known: new Set(),
        finished: { completed: new Map(), failed: new Map() },
      };
      queues.set(queue, s);
    }
    return s;
  };
  const later = (ms: number, fn: () => void): NodeJS.Timeout => {
    const timer = setTimeout(
      () => {
        timers.delete(timer);
        fn();
      },
      Math.max(0, Math.min(ms, MAX_TIMER_MS)),
    );
    timers.add(timer);
    return timer;
  };
  const enqueueLater = (queue: string, job: Job, ms: number) => {
    const { delayed } = state(queue);
    delayed.set(
      job,
      later(ms, () => {
        delayed.delete(job);
        enqueue(queue, job);
      }),
    );
  };
  const enqueue = (queue: string, job: Job) => {
    state(queue).waiting.push(job);
    drain(queue);
  };
  const drain = (queue: string) => {
    const s = state(queue);
    const handler = s.handler;
    if (!handler || closed || s.paused) return;
    while (s.running.size < s.concurrency && s.waiting.length > 0) {
      const job = s.waiting.shift()!;
      const run: Promise<void> = execute(queue, handler, job).finally(() => {
        s.running.delete(run);
        drain(queue);
      });
      s.running.add(run);
    }
  };
  /** Remembers a finished id, forgetting those past the outcome's age or count bound. */
  const finish = (queue: string, id: string, outcome: 'completed' | 'failed') => {
    const s = state(queue);
    const kept = s.finished[outcome];
    const { ageMs, count } = retention[outcome];
    const now = Date.now();
    kept.set(id, now);
    for (const [oldId, finishedAt] of kept) {
      if (kept.size <= count && now - finishedAt <= ageMs) break;
      kept.delete(oldId);
      s.known.delete(oldId);
    }
  };
  const execute = async (queue: string, handler: JobHandler, job: Job) => {
    job.attempt += 1;
    try {
      await handler(structuredClone(job.data), {
        jobId: job.id,
        attempt: job.attempt,
        attempts: job.attempts,
        signal: shutdown.signal,
        ...(job.scheduleId !== undefined ? { scheduleId: job.scheduleId } : {}),
        ...(job.scheduledAt !== undefined ? { scheduledAt: job.scheduledAt } : {}),
      });
      finish(queue, job.id, 'completed');
    } catch (error) {
      options.onError?.(error, { queue, jobId: job.id });
      if (closed || error instanceof UnrecoverableJobError || job.attempt >= job.attempts) {
        finish(queue, job.id, 'failed');
        return;
      }
      enqueueLater(queue, job, retryBase * 2 ** (job.attempt - 1));
    }
  };
  const arm = (queue: string, scheduleId: string, key: string, fromMs: number) => {
    const schedule = schedules.get(key);
    if (!schedule || closed) return;
    const { timing } = schedule;
    const at = timing.kind === 'once' ? timing.at : nextCronOccurrence(timing, fromMs);
    if (at === null) {
      schedules.delete(key);
      return;
    }
    const fire = () => {
      if (schedules.get(key) !== schedule) return;
      const remaining = at - Date.now();
      if (remaining > 0) {
        schedule.timer = later(remaining, fire);
        return;
      }
      const id = occurrenceJobId(timing.kind === 'once' ? 'once' : 'repeat', scheduleId, at);
      const s = state(queue);
      if (!s.known.has(id)) {
        s.known.add(id);
        enqueue(queue, {
          id,
          data: schedule.data,
          attempts: DEFAULT_ATTEMPTS,
          attempt: 0,
          scheduleId,
          scheduledAt: at,
        });
      }
      if (timing.kind === 'once') schedules.delete(key);
      else arm(queue, scheduleId, key, at);
    };
    schedule.timer = later(at - Date.now(), fire);
  };
  const open = () => {
    if (closed) throw new JobQueueClosedError();
  };
  const keyOf = (queue: string, scheduleId: string) => {
    if (scheduleId.length === 0) throw new Error('schedule ids must not be empty');
    return `${queue}\u0000${scheduleId}`;
  };

  return {
    async add(queue, data, addOptions: AddJobOptions = {}) {
      open();
      const s = state(queue);
      const id = addOptions.jobId ?? `job-${crypto.randomUUID()}`;
      if (s.known.has(id)) return { jobId: id };
      s.known.add(id);
      const job: Job = {
        id,
        data: structuredClone(data),
        attempts: addOptions.attempts ?? DEFAULT_ATTEMPTS,
        attempt: 0,
      };
      const delay = addOptions.delayMs ?? 0;
      if (delay > 0) enqueueLater(queue, job, delay);
      else enqueue(queue, job);
      return { jobId: id };
    },
    async process(queue, handler, processOptions: ProcessOptions = {}) {
      open();
      const s = state(queue);
      if (s.handler) throw new Error(`queue ${queue} already has a handler`);
      s.handler = handler;
      s.concurrency = processOptions.concurrency ?? 1;
      drain(queue);
    },
    async pause(queue) {
      open();
      state(queue).paused = true;
    },
    async upsertSchedule(queue, scheduleId, timing, data) {
      open();
      state(queue);
      const key = keyOf(queue, scheduleId);
      const previous = schedules.get(key);
      if (previous?.timer) clearTimeout(previous.timer);
      schedules.set(key, { timing, data: structuredClone(data) });
      arm(queue, scheduleId, key, Date.now());
    },
    async removeSchedule(queue, scheduleId) {
      open();
      const key = keyOf(queue, scheduleId);
      const schedule = schedules.get(key);
      if (!schedule) return false;
      if (schedule.timer) clearTimeout(schedule.timer);
      schedules.delete(key);
      return true;
    },
    async removeJobs(queue, match) {
      open();
      const s = state(queue);
      let removed = 0;
      const kept = s.waiting.filter((job) => !match(structuredClone(job.data)));
      removed += s.waiting.length - kept.length;
      s.waiting.splice(0, s.waiting.length, ...kept);
      for (const [job, timer] of s.delayed) {
        if (!match(structuredClone(job.data))) continue;
        clearTimeout(timer);
        timers.delete(timer);
        s.delayed.delete(job);
        removed += 1;
      }
      return removed;
    },
    async listSchedules(queue) {
      open();
      const prefix = `${queue}\u0000`;
      return [...schedules.keys()]
        .filter((k) => k.startsWith(prefix))
        .map((k) => k.slice(prefix.length));
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      schedules.clear();
      shutdown.abort(new JobQueueClosedError());
      const running = [...queues.values()].flatMap((s) => [...s.running]);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled(running),
        new Promise((resolve) => (timer = setTimeout(resolve, options.drainTimeoutMs ?? 10_000))),
      ]);
      clearTimeout(timer);
    },
  };
}
