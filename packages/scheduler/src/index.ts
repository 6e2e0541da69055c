/**
 * Scheduled tasks: the accepted values and occurrence rules, the task and run records in the
 * durable store, sync, and reconciliation of the job schedules from the store.
 */
export {
  CONNECTORS,
  PAST_GRACE_MS,
  REPEAT_TYPES,
  RUN_MODES,
  SYNC_STATUSES,
  planSchedule,
  scheduleIssues,
  wallTimeToInstant,
  type RepeatType,
  type RunMode,
  type ScheduleIssue,
  type SchedulePlan,
} from './schedule-rules.js';
export { TaskRepository, type TaskRecord, type TaskStatus } from './task-repository.js';
export {
  RunRepository,
  type Claim,
  type ClaimRequest,
  type RunRecord,
  type RunStatus,
} from './run-repository.js';
export { ConfirmRunRequest, SCHEDULED_TASKS_QUEUE, TaskJob, occurrenceId } from './task-jobs.js';
export { InvalidScheduleError, applyTask, syncTask, type TaskSyncResult } from './task-sync.js';
export { reconcileSchedules, type ReconcileResult } from './reconcile.js';
