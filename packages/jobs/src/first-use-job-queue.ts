import { JobQueueClosedError, type JobQueue } from './job-queue.js';

/** A {@link JobQueue} opened at its first call; {@link open} reaches what it opened. */
export interface FirstUseJobQueue<Q extends JobQueue> extends JobQueue {
  /**
   * Opens the queue if no call did yet (once) and returns it: for what needs the adapter itself
   * (BullMQ's queue objects, for the dashboard). Rejects with {@link JobQueueClosedError} after
   * `close`.
   */
  open(): Promise<Q>;
}

/**
 * A {@link JobQueue} opened by its first call: `open` (BullMQ and its Redis connection, say) runs
 * then, once, and every call goes to what it made. A process that never calls it (the gateway; an
 * api replica until a request enqueues) never opens it, so never loads BullMQ
 * (docs/BENCHMARKS.md, "Footprint"). `close` closes the opened queue, or only refuses later calls
 * when none was opened.
 */
export function jobQueueAtFirstUse<Q extends JobQueue>(
  open: () => Promise<Q>,
): FirstUseJobQueue<Q> {
  let opened: Promise<Q> | undefined;
  let closed = false;
  const queue = (): Promise<Q> => {
    if (closed) return Promise.reject(new JobQueueClosedError());
    return (opened ??= open());
  };
  return {
    open: queue,
    add: async (name, data, options) => (await queue()).add(name, data, options),
    process: async (name, handler, options) => (await queue()).process(name, handler, options),
    pause: async (name) => (await queue()).pause(name),
    upsertSchedule: async (name, id, timing, data) =>
      (await queue()).upsertSchedule(name, id, timing, data),
    removeSchedule: async (name, id) => (await queue()).removeSchedule(name, id),
    removeJobs: async (name, match) => (await queue()).removeJobs(name, match),
    listSchedules: async (name) => (await queue()).listSchedules(name),
    async close() {
      closed = true;
      if (opened) await (await opened).close();
    },
  };
}
