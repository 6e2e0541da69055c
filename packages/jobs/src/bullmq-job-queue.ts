import type { ConnectionOptions, Queue, Worker } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import {
  DEFAULT_ATTEMPTS,
  JobQueueClosedError,
  RETRY_BASE_DELAY_MS,
  UnrecoverableJobError,
  type AddJobOptions,
  type JobQueue,
} from './job-queue.js';
import { loadBullmq } from './bullmq-classes.js';
import { closeBullmq } from './bullmq-close.js';
import { cronRepeatStrategy } from './cron.js';
import { encodeId, occurrenceJobId, parseOccurrenceJobId } from './job-ids.js';
import { jobRetention, type JobRetention } from './job-retention.js';

export interface BullmqJobQueueOptions {
  /**
   * A connection created with `maxRetriesPerRequest: null` (BullMQ's requirement for workers).
   * Queues share it; each worker duplicates it for its blocking reads. Not closed by `close()`.
   */
  connection: Redis | Cluster;
  /** BullMQ key prefix, from `redisKeys(prefix).jobs()` (e.g. `ab:bull`). */
  prefix: string;
  /**
   * How long a worker's lock on a job lasts without renewal; a job whose worker died is
   * delivered again after about this long (BullMQ checks for stalled jobs at the same interval).
   * @default 30_000
   */
  lockDurationMs?: number;
  /**
   * How long `close()` waits for running handlers; then it forces the workers closed, and the
   * whole close stays within this plus a few seconds (see `closeBullmq`). @default 10_000
   */
  drainTimeoutMs?: number;
  /**
   * How many finished jobs each queue keeps, and for how long (their ids deduplicate `add` while
   * kept). Bounds left out take `DEFAULT_JOB_RETENTION`'s.
   */
  retention?: { completed?: Partial<JobRetention>; failed?: Partial<JobRetention> };
  /** Receives failed attempts and worker errors. */
  onError?: (error: unknown, info: { queue: string; jobId?: string }) => void;
  /**
   * `add`, `upsertSchedule`, `removeSchedule` and `listSchedules` reject after this long (an
   * `ETIMEDOUT` error) instead of waiting for Redis to come back: the connection never gives up
   * on a command (workers need that), but the request that adds a job must answer. The command
   * may still complete later; adds with a job id and upserts are idempotent, so the caller's
   * retry is safe. @default no deadline
   */
  commandTimeoutMs?: number;
}

/** Rejects with an `ETIMEDOUT` error when `work` takes longer than `ms` (undefined: no limit). */
async function withTimeout<T>(work: Promise<T>, ms: number | undefined): Promise<T> {
  if (!ms) return work;
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          Object.assign(new Error(`the job queue (Redis) did not answer within ${ms} ms`), {
            code: 'ETIMEDOUT',
          }),
        ),
      ms,
    );
  });
  work.catch(() => undefined);
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * What only the BullMQ adapter offers, for operators' tools (the queue dashboard, queue-depth
 * metrics): the BullMQ `Queue` of a queue name, created on first use like the adapter's own, and
 * closed by the adapter's `close()`. Not part of the {@link JobQueue} port.
 */
export interface BullmqQueues {
  queue(name: string): Queue;
  /** Job counts of a queue by state (waiting, active, delayed, prioritized, failed, completed). */
  counts(name: string): Promise<Record<string, number>>;
}

/**
 * The BullMQ adapter: cron schedules are BullMQ job schedulers keyed by the schedule id (one
 * delayed job per occurrence, id `repeat:<id>:<ms>`, so replicas never double an occurrence);
 * `once` schedules are delayed jobs with id `once:<id>:<ms>`, remembered in a hash so they can be
 * removed by schedule id. Stalled jobs (worker killed) come back after `lockDurationMs` once;
 * a second stall fails the job (BullMQ `maxStalledCount` 1).
 */
export async function createBullmqJobQueue(
  options: BullmqJobQueueOptions,
): Promise<JobQueue & { readonly bullmq: BullmqQueues }> {
  // Loaded here, not at import: a process on the in-process queues never loads BullMQ.
  const { Queue, UnrecoverableError, WaitingError, Worker } = await loadBullmq();
  const connection = options.connection as unknown as ConnectionOptions;
  const { prefix } = options;
  const queues = new Map<string, Queue>();
  const workers: Worker[] = [];
  /** The workers by queue name, to pause a queue's. */
  const workersOf = new Map<string, Worker[]>();
  /** Queues this process takes no more jobs of (see `JobQueue.pause`). */
  const paused = new Set<string>();
  const shutdown = new AbortController();
  const retention = jobRetention(options.retention);
  let closed = false;

  // Every job (added, scheduled occurrence, `once` schedule) is trimmed by age and count when a
  // job of the same outcome finishes, so Redis holds a bounded number of finished jobs.
  const jobOptions = (attempts = DEFAULT_ATTEMPTS) => ({
    attempts,
    backoff: { type: 'exponential' as const, delay: RETRY_BASE_DELAY_MS },
    removeOnComplete: keepJobs(retention.completed),
    removeOnFail: keepJobs(retention.failed),
  });

  const queueOf = (name: string): Queue => {
    if (closed) throw new JobQueueClosedError();
    if (name.length === 0 || name.includes(':')) throw new Error(`invalid queue name: ${name}`);
    let queue = queues.get(name);
    if (!queue) {
      // Our occurrence computation, not cron-parser's: both adapters then agree on every
      // daylight-saving edge case, and an upsert costs microseconds instead of milliseconds.
      // The same options as every job we add, for jobs added by other means (the dashboard).
      queue = new Queue(name, {
        connection,
        prefix,
        settings: { repeatStrategy: cronRepeatStrategy },
        defaultJobOptions: jobOptions(),
      });
      queue.on('error', (error) => options.onError?.(error, { queue: name }));
      queues.set(name, queue);
    }
    return queue;
  };
  /** Hash of a queue's `once` schedules: schedule id → job id. */
  const onceKey = (queue: string) => `${prefix}:${queue}:ab-once`;

  const jobQueue: JobQueue = {
    async add(queue, data, addOptions: AddJobOptions = {}) {
      const q = queueOf(queue);
      const id = addOptions.jobId ?? `job-${crypto.randomUUID()}`;
      await q.add(queue, data, {
        ...jobOptions(addOptions.attempts),
        jobId: `job_${encodeId(id)}`,
        delay: Math.max(0, addOptions.delayMs ?? 0),
      });
      return { jobId: id };
    },

    async process(queue, handler, processOptions = {}) {
      queueOf(queue);
      const worker = new Worker(
        queue,
        async (job, token) => {
          if (paused.has(queue)) {
            // Fetched by a read that was already waiting when the worker paused: back to wait,
            // for another process (BullMQ's way to give a job back, not a failed attempt).
            await job.moveToWait(token);
            throw new WaitingError();
          }
          const occurrence = job.id ? parseOccurrenceJobId(job.id) : undefined;
          try {
            const result = await handler(job.data, {
              jobId: occurrence ? job.id! : decodeJobId(job.id ?? ''),
              attempt: job.attemptsMade + 1,
              attempts: job.opts.attempts ?? 1,
              signal: shutdown.signal,
              ...(occurrence ?? {}),
            });
            // A `once` schedule that ran is over: its entry would otherwise stay for good.
            if (occurrence && job.id!.startsWith('once:')) {
              options.connection
                .eval(FORGET_ONCE, 1, onceKey(queue), occurrence.scheduleId, job.id!)
                .catch((error: unknown) => options.onError?.(error, { queue, jobId: job.id! }));
            }
            return result;
          } catch (error) {
            if (error instanceof UnrecoverableJobError) throw new UnrecoverableError(error.message);
            throw error;
          }
        },
        {
          connection,
          prefix,
          settings: { repeatStrategy: cronRepeatStrategy },
          concurrency: processOptions.concurrency ?? 1,
          lockDuration: options.lockDurationMs ?? 30_000,
          stalledInterval: options.lockDurationMs ?? 30_000,
          maxStalledCount: 1,
        },
      );
      worker.on('failed', (job, error) =>
        options.onError?.(error, { queue, ...(job?.id ? { jobId: job.id } : {}) }),
      );
      worker.on('error', (error) => options.onError?.(error, { queue }));
      workers.push(worker);
      workersOf.set(queue, [...(workersOf.get(queue) ?? []), worker]);
      await worker.waitUntilReady();
    },

    async pause(queue) {
      queueOf(queue);
      paused.add(queue);
      // Running jobs go on (they are not waited for here); no more are fetched.
      await Promise.all((workersOf.get(queue) ?? []).map((worker) => worker.pause(true)));
    },

    async upsertSchedule(queue, scheduleId, timing, data) {
      const q = queueOf(queue);
      const redis = options.connection;
      if (timing.kind === 'once') {
        await q.removeJobScheduler(encodeId(scheduleId));
        const jobId = occurrenceJobId('once', scheduleId, timing.at);
        const previous = await redis.hget(onceKey(queue), scheduleId);
        if (previous && previous !== jobId) await removeIfWaiting(q, previous);
        await q.add(queue, data, {
          ...jobOptions(),
          jobId,
          delay: Math.max(0, timing.at - Date.now()),
        });
        await redis.hset(onceKey(queue), scheduleId, jobId);
        return;
      }
      const previous = await redis.hget(onceKey(queue), scheduleId);
      if (previous) {
        await removeIfWaiting(q, previous);
        await redis.hdel(onceKey(queue), scheduleId);
      }
      await q.upsertJobScheduler(
        encodeId(scheduleId),
        {
          pattern: timing.pattern,
          tz: timing.tz,
          ...(timing.startDate !== undefined ? { startDate: timing.startDate } : {}),
          ...(timing.endDate !== undefined ? { endDate: timing.endDate } : {}),
        },
        { name: queue, data, opts: jobOptions() },
      );
    },

    async removeSchedule(queue, scheduleId) {
      const q = queueOf(queue);
      const redis = options.connection;
      const onceJob = await redis.hget(onceKey(queue), scheduleId);
      let existed = false;
      if (onceJob) {
        existed = await removeIfWaiting(q, onceJob);
        await redis.hdel(onceKey(queue), scheduleId);
      }
      const id = encodeId(scheduleId);
      if (await q.getJobScheduler(id)) {
        await q.removeJobScheduler(id);
        existed = true;
      }
      return existed;
    },

    async removeJobs(queue, match) {
      const q = queueOf(queue);
      let removed = 0;
      // Page by page from the end of each list, so removals never shift a page not yet read.
      for (const state of REMOVABLE_STATES) {
        const total = await q.getJobCountByTypes(state);
        for (let end = total - 1; end >= 0; end -= 1000) {
          const page = await q.getJobs([state], Math.max(0, end - 999), end);
          for (const job of page) {
            // A job taken by a worker meanwhile is locked: remove() refuses it, and it runs.
            if (!job?.id || !match(job.data)) continue;
            if ((await q.remove(job.id)) === 1) removed += 1;
          }
        }
      }
      return removed;
    },

    async listSchedules(queue) {
      const q = queueOf(queue);
      const ids: string[] = [];
      for (let start = 0; ; start += 1000) {
        const page = await q.getJobSchedulers(start, start + 999, true);
        ids.push(...page.map((s) => decodeURIComponent(s.key)));
        if (page.length < 1000) break;
      }
      const once = await options.connection.hgetall(onceKey(queue));
      for (const [scheduleId, jobId] of Object.entries(once)) {
        const state = await q.getJobState(jobId);
        if (state === 'delayed' || state === 'waiting' || state === 'prioritized')
          ids.push(scheduleId);
      }
      return ids;
    },

    async close() {
      if (closed) return;
      closed = true;
      shutdown.abort(new JobQueueClosedError());
      await closeBullmq(workers, [...queues.values()], options.drainTimeoutMs ?? 10_000);
    },
  };
  const ms = options.commandTimeoutMs;
  return {
    ...jobQueue,
    bullmq: {
      queue: queueOf,
      counts: (name) =>
        queueOf(name).getJobCounts(
          'waiting',
          'active',
          'delayed',
          'prioritized',
          'failed',
          'completed',
        ),
    },
    add: (queue, data, addOptions) => withTimeout(jobQueue.add(queue, data, addOptions), ms),
    upsertSchedule: (queue, scheduleId, timing, data) =>
      withTimeout(jobQueue.upsertSchedule(queue, scheduleId, timing, data), ms),
    removeSchedule: (queue, scheduleId) =>
      withTimeout(jobQueue.removeSchedule(queue, scheduleId), ms),
    listSchedules: (queue) => withTimeout(jobQueue.listSchedules(queue), ms),
    removeJobs: (queue, match) => withTimeout(jobQueue.removeJobs(queue, match), ms),
  };
}

/** The states {@link JobQueue.removeJobs} empties: every one but `active`. */
const REMOVABLE_STATES = [
  'waiting',
  'delayed',
  'prioritized',
  'waiting-children',
  'completed',
  'failed',
] as const;

/** Deletes a `once` schedule's entry if it still names the job that ran (not a newer upsert). */
const FORGET_ONCE = `if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  return redis.call('HDEL', KEYS[1], ARGV[1])
end
return 0`;

/** BullMQ's `KeepJobs` of a bound: age in whole seconds (at least 1), count as is. */
function keepJobs(bound: JobRetention): { age: number; count: number } {
  return { age: Math.max(1, Math.ceil(bound.ageMs / 1000)), count: bound.count };
}

/** Removes a job that has not started; a running or finished one is left alone. */
async function removeIfWaiting(queue: Queue, jobId: string): Promise<boolean> {
  const state = await queue.getJobState(jobId);
  if (state !== 'delayed' && state !== 'waiting' && state !== 'prioritized') return false;
  const job = await queue.getJob(jobId);
  if (!job) return false;
  try {
    await job.remove();
    return true;
  } catch {
    return false;
  }
}

/** The caller's id of an added job (ids are prefixed so none collides with BullMQ's own keys). */
function decodeJobId(jobId: string): string {
  const raw = jobId.startsWith('job_') ? jobId.slice(4) : jobId;
  const unprefixed = /^id-\d+$/.test(raw) ? raw.slice(3) : raw;
  return decodeURIComponent(unprefixed);
}
