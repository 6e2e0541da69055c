import type { ScheduledTask, ScheduledTaskStatus } from '@agent-backend/protocol';
import type { Queryable } from '@agent-backend/store';

/**
 * Service-side status of a task (spec 3.4 shows only `pending`):
 *
 * | status | meaning | next |
 * |---|---|---|
 * | `pending` | scheduled; `next_run_at` is the next occurrence | `awaiting_confirmation`, `running`, `expired` |
 * | `awaiting_confirmation` | an occurrence waits for the user's answer | `running`, `pending` (declined/expired, repeating), `expired`, `completed` |
 * | `running` | an occurrence is executing | `pending` (repeating), `completed`, `failed` |
 * | `completed` / `failed` | a `no-repeat` task ran (successfully or not) | a new sync |
 * | `expired` | a `no-repeat` instant passed before it could run, or was not confirmed | a new sync |
 * | `paused`, `cancelled` | synced inactive by the web layer; not scheduled | a new sync |
 * | `removed` | removed by sync; late jobs of it are skipped | a new `add`/`update` |
 */
export type TaskStatus = ScheduledTaskStatus;

export interface TaskRecord {
  taskId: string;
  userId: string;
  task: ScheduledTask;
  status: TaskStatus;
  nextRunAt: Date | null;
  updatedAt: Date;
}

interface TaskRow extends Record<string, unknown> {
  task_id: string;
  user_id: string;
  task: ScheduledTask;
  status: TaskStatus;
  next_run_at: Date | null;
  updated_at: Date;
}

const toRecord = (row: TaskRow): TaskRecord => ({
  taskId: row.task_id,
  userId: row.user_id,
  task: row.task,
  status: row.status,
  nextRunAt: row.next_run_at,
  updatedAt: row.updated_at,
});

/** Task records in the durable store: the source of truth the schedules are rebuilt from. */
export class TaskRepository {
  constructor(private readonly db: Queryable) {}

  /** Inserts or replaces a task (sync `add` and `update` are the same upsert). */
  async upsert(task: ScheduledTask, status: TaskStatus, nextRunAt: number | null): Promise<void> {
    await this.db.query(
      `INSERT INTO scheduled_tasks (task_id, user_id, task, status, next_run_at)
       VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (task_id) DO UPDATE SET user_id = $2, task = $3, status = $4,
         next_run_at = $5, updated_at = now()`,
      [task.id, task.user_id, JSON.stringify(task), status, nextRunAt ? new Date(nextRunAt) : null],
    );
  }

  async get(taskId: string): Promise<TaskRecord | undefined> {
    const { rows } = await this.db.query<TaskRow>(
      'SELECT * FROM scheduled_tasks WHERE task_id = $1',
      [taskId],
    );
    return rows[0] ? toRecord(rows[0]) : undefined;
  }

  /** Marks a task removed. @returns whether it existed and was not already removed. */
  async markRemoved(taskId: string): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `UPDATE scheduled_tasks SET status = 'removed', next_run_at = NULL, updated_at = now()
       WHERE task_id = $1 AND status <> 'removed'`,
      [taskId],
    );
    return rowCount > 0;
  }

  /**
   * Sets the status unless the task was re-synced or removed meanwhile (`expectedTask` is the
   * task JSON the caller acted on), so a late run never overwrites a newer sync.
   */
  async setStatus(
    taskId: string,
    status: TaskStatus,
    nextRunAt: number | null,
    expectedTask?: ScheduledTask,
  ): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `UPDATE scheduled_tasks SET status = $2, next_run_at = $3, updated_at = now()
       WHERE task_id = $1 AND status <> 'removed' AND ($4::jsonb IS NULL OR task = $4::jsonb)`,
      [
        taskId,
        status,
        nextRunAt ? new Date(nextRunAt) : null,
        expectedTask ? JSON.stringify(expectedTask) : null,
      ],
    );
    return rowCount > 0;
  }

  /**
   * A user's tasks (removed ones left out), most recently changed first; tasks changed at the
   * same instant (one sync's transaction) by id, descending, so the order and a limited list
   * are the same at every call.
   */
  async listForUser(userId: string, limit: number): Promise<TaskRecord[]> {
    const { rows } = await this.db.query<TaskRow>(
      `SELECT * FROM scheduled_tasks WHERE user_id = $1 AND status <> 'removed'
       ORDER BY updated_at DESC, task_id DESC LIMIT $2`,
      [userId, limit],
    );
    return rows.map(toRecord);
  }

  /** Tasks whose schedule must exist in the job queue (reconciliation at worker start). */
  async listSchedulable(after: string | null, limit: number): Promise<TaskRecord[]> {
    const { rows } = await this.db.query<TaskRow>(
      `SELECT * FROM scheduled_tasks
       WHERE status IN ('pending', 'awaiting_confirmation', 'running') AND ($1::text IS NULL OR task_id > $1)
       ORDER BY task_id LIMIT $2`,
      [after, limit],
    );
    return rows.map(toRecord);
  }
}
