import { jobTraceContext, type JobQueue } from '@agent-backend/jobs';
import type { ScheduledTask, TaskSyncRequest } from '@agent-backend/protocol';
import type { Database } from '@agent-backend/store';
import { planSchedule, scheduleIssues, type ScheduleIssue } from './schedule-rules.js';
import { SCHEDULED_TASKS_QUEUE, type TaskJob } from './task-jobs.js';
import { TaskRepository, type TaskStatus } from './task-repository.js';

export interface TaskSyncResult {
  /** `false` only for a `remove` of a task the service never had (still a 200: see docs). */
  success: boolean;
  status: TaskStatus | 'unknown';
  nextRunAt: number | null;
}

/** A task whose schedule fields are invalid; carries field errors for the 400. */
export class InvalidScheduleError extends Error {
  constructor(readonly issues: ScheduleIssue[]) {
    super('invalid schedule');
    this.name = 'InvalidScheduleError';
  }
}

/**
 * Applies a sync request: the durable record first (the truth reconciliation rebuilds from),
 * then the schedule. `add` and `update` are the same idempotent upsert; `remove` unschedules and
 * marks the record removed. Any replica may run it; BullMQ upserts by schedule id.
 */
export async function syncTask(
  deps: { db: Database; jobs: JobQueue; now?: () => number },
  request: TaskSyncRequest,
): Promise<TaskSyncResult> {
  const tasks = new TaskRepository(deps.db);
  if (request.action === 'remove') {
    const existed = await tasks.markRemoved(request.task_id);
    await deps.jobs.removeSchedule(SCHEDULED_TASKS_QUEUE, request.task_id);
    const known = existed || (await tasks.get(request.task_id)) !== undefined;
    return { success: known, status: known ? 'removed' : 'unknown', nextRunAt: null };
  }
  const task = request.task!;
  const issues = scheduleIssues(task);
  if (issues.length > 0) throw new InvalidScheduleError(issues);
  return applyTask(deps, task);
}

/** Stores `task` with the status its schedule gives, and (un)schedules it. */
export async function applyTask(
  deps: { db: Database; jobs: JobQueue; now?: () => number },
  task: ScheduledTask,
): Promise<TaskSyncResult> {
  const tasks = new TaskRepository(deps.db);
  const now = (deps.now ?? Date.now)();
  if (task.status !== 'pending') {
    await tasks.upsert(task, task.status as TaskStatus, null);
    await deps.jobs.removeSchedule(SCHEDULED_TASKS_QUEUE, task.id);
    return { success: true, status: task.status as TaskStatus, nextRunAt: null };
  }
  const plan = planSchedule(task, now);
  if (plan.kind === 'expired') {
    await tasks.upsert(task, 'expired', null);
    await deps.jobs.removeSchedule(SCHEDULED_TASKS_QUEUE, task.id);
    return { success: true, status: 'expired', nextRunAt: null };
  }
  await tasks.upsert(task, 'pending', plan.nextRunAt);
  const trace = jobTraceContext();
  const data: TaskJob = { kind: 'due', taskId: task.id, ...(trace ? { trace } : {}) };
  await deps.jobs.upsertSchedule(SCHEDULED_TASKS_QUEUE, task.id, plan.timing, data);
  return { success: true, status: 'pending', nextRunAt: plan.nextRunAt };
}
