export {
  DEFAULT_ATTEMPTS,
  JobQueueClosedError,
  RETRY_BASE_DELAY_MS,
  UnrecoverableJobError,
  type AddJobOptions,
  type JobContext,
  type JobHandler,
  type JobQueue,
  type ProcessOptions,
  type ScheduleTiming,
} from './job-queue.js';
export { assertValidCron, nextCronOccurrence, type CronOptions } from './cron.js';
export { dateIn, isValidTimeZone } from './time-zone.js';
export { encodeId, occurrenceJobId, parseOccurrenceJobId } from './job-ids.js';
export {
  DEFAULT_JOB_RETENTION,
  jobRetention,
  type JobRetention,
  type JobRetentionPolicy,
} from './job-retention.js';
export { createMemoryJobQueue, type MemoryJobQueueOptions } from './memory-job-queue.js';
export {
  createBullmqJobQueue,
  type BullmqJobQueueOptions,
  type BullmqQueues,
} from './bullmq-job-queue.js';
export { jobQueueAtFirstUse, type FirstUseJobQueue } from './first-use-job-queue.js';
export { inJobSpan, jobTraceContext } from './job-trace.js';
export { FORCE_CLOSE_GRACE_MS } from './bullmq-close.js';
