import type { JobQueue } from '@agent-backend/jobs';
import type { Database } from '@agent-backend/store';
import { planSchedule } from './schedule-rules.js';
import { SCHEDULED_TASKS_QUEUE, type TaskJob } from './task-jobs.js';
import { TaskRepository } from './task-repository.js';
import { RunRepository } from './run-repository.js';

export interface ReconcileResult {
  scheduled: number;
  /**
   * `no-repeat` tasks whose instant passed while nothing ran them, or whose run was left
   * unfinished: scheduled to run now.
   */
  caughtUp: number;
}

/** Run states of an occurrence that its job must still bring to an end. */
const UNFINISHED: ReadonlySet<string> = new Set(['running', 'confirmed']);

/**
 * Rebuilds the job schedules from the durable store, so a Redis that lost its data (or the
 * in-process queue of a restarted all-in-one) loses no task. Idempotent: upserting a schedule
 * that exists changes nothing, and every replica may run it at start.
 *
 * A repeating task resumes at its next occurrence; occurrences missed while nothing was
 * running are not replayed. A `no-repeat` task whose instant passed runs at once when it never
 * ran, and again when its run is unfinished (`running`, `confirmed`): its job went with the
 * data, for instance after the run hit the outage and gave its lease back to the retry that
 * Redis then lost (tests/faults/redis-restart.test.ts). The job's claim takes such a run over
 * once its lease is free, and retries while another worker still holds it.
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
      // `running`: a run was under way; `awaiting_confirmation` waits for the user.
      if (record.status !== 'pending' && record.status !== 'running') continue;
      const data: TaskJob = { kind: 'due', taskId: record.taskId };
      const now = (deps.now ?? Date.now)();
      if (record.task.repeat_type === 'no-repeat' && record.nextRunAt) {
        const at = record.nextRunAt.getTime();
        if (at <= now) {
          const run = await runs.get(record.taskId, at);
          if (run && !UNFINISHED.has(run.status)) continue;
          result.caughtUp += 1;
        }
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
        // A running occurrence sets the task `pending` again when it ends.
        if (record.status === 'pending') {
          await tasks.setStatus(record.taskId, 'pending', plan.nextRunAt, record.task);
        }
      }
      result.scheduled += 1;
    }
  }
  return result;
}
