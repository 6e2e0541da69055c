export type { JobQueue, AddJobOptions, ScheduleTiming, JobContext, JobHandler } from './job-queue.js';
