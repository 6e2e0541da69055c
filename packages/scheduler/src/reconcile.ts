import type { JobQueue } from '@agent-backend/jobs';
import type { Database } from '@agent-backend/store';
import { planSchedule } from './schedule-rules.js';
import { SCHEDULED_TASKS_QUEUE, type TaskJob } from './task-jobs.js';
import { TaskRepository } from './task-repository.js';
import { RunRepository } from './run-repository.js';

export interface ReconcileResult {
  scheduled: number;
  /** `no-repeat` tasks whose instant passed while nothing ran them: scheduled to run now. */
  caughtUp: number;
}

/**
 * Rebuilds the job schedules from the durable store, so a Redis that lost its data (or the
 * in-process queue of a restarted all-in-one) loses no task. Idempotent: upserting a schedule
 * that exists changes nothing, and every replica may run it at start.
 *
 * A repeating task resumes at its next occurrence; occurrences missed while nothing was
 * running are not replayed. A `no-repeat` task still `pending` whose instant passed (and that
 * has no run yet) runs at once: it was accepted and never ran.
 */
export async function reconcileSchedules(deps: {
  db: Database;
  jobs: JobQueue;
  now?: () => number;
  pageSize?: number;
}): Promise<ReconcileResult> {
  const tasks = new TaskRepository(deps.db);
  const runs = new RunRepository(deps.db);
  const result: ReconcileResult = { scheduled: 0, caughtUp: 0 };
  let after: string | null = null;
  for (;;) {
    const page = await tasks.listSchedulable(after, deps.pageSize ?? 500);
    if (page.length === 0) break;
    for (const record of page) {
      after = record.taskId;
      if (record.status !== 'pending') continue;
      const data: TaskJob = { kind: 'due', taskId: record.taskId };
      const now = (deps.now ?? Date.now)();
      if (record.task.repeat_type === 'no-repeat' && record.nextRunAt) {
        const at = record.nextRunAt.getTime();
        if (at <= now && (await runs.get(record.taskId, at))) continue;
        if (at <= now) result.caughtUp += 1;
        await deps.jobs.upsertSchedule(
          SCHEDULED_TASKS_QUEUE,
          record.taskId,
          { kind: 'once', at },
          data,
        );
      } else {
        const plan = planSchedule(record.task, now);
        if (plan.kind !== 'schedule') continue;
        await deps.jobs.upsertSchedule(SCHEDULED_TASKS_QUEUE, record.taskId, plan.timing, data);
        await tasks.setStatus(record.taskId, 'pending', plan.nextRunAt, record.task);
      }
      result.scheduled += 1;
    }
  }
  return result;
}
