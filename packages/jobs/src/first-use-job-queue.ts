import { JobQueueClosedError, type JobQueue } from './job-queue.js';

/**
 * A {@link JobQueue} opened by its first call: `open` (BullMQ and its Redis connection, say) runs
 * then, once, and every call goes to what it made. A process that never calls it (the gateway)
 * never opens it, so never loads BullMQ (docs/BENCHMARKS.md, "Footprint"). `close` closes the
 * opened queue, or only refuses later calls when none was opened.
 */
export function jobQueueAtFirstUse(open: () => Promise<JobQueue>): JobQueue {
  let opened: Promise<JobQueue> | undefined;
  let closed = false;
  const queue = (): Promise<JobQueue> => {
    if (closed) return Promise.reject(new JobQueueClosedError());
    return (opened ??= open());
  };
  return {
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
