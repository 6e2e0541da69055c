import type { ScheduledTaskRunStatus } from '@agent-backend/protocol';
import type { Queryable } from '@agent-backend/store';

/**
 * Status of one occurrence (row key: task id + scheduled instant):
 * `awaiting_confirmation` → `confirmed` (user said yes) | `declined` | `expired` (no answer in
 * time); `confirmed` or new (auto) → `running` → `succeeded` | `failed`.
 */
export type RunStatus = ScheduledTaskRunStatus;

export interface RunRecord {
  taskId: string;
  scheduledAt: Date;
  userId: string;
  status: RunStatus;
  attempts: number;
  worker: string | null;
  output: string | null;
  error: string | null;
  expiresAt: Date | null;
  notifiedAt: Date | null;
  finishedAt: Date | null;
}

interface RunRow extends Record<string, unknown> {
  task_id: string;
  scheduled_at: Date;
  user_id: string;
  status: RunStatus;
  attempts: number;
  worker: string | null;
  output: string | null;
  error: string | null;
  expires_at: Date | null;
  notified_at: Date | null;
  finished_at: Date | null;
}

const toRecord = (r: RunRow): RunRecord => ({
  taskId: r.task_id,
  scheduledAt: r.scheduled_at,
  userId: r.user_id,
  status: r.status,
  attempts: r.attempts,
  worker: r.worker,
  output: r.output,
  error: r.error,
  expiresAt: r.expires_at,
  notifiedAt: r.notified_at,
  finishedAt: r.finished_at,
});

/** The outcome of trying to start an occurrence. */
export type Claim =
  /** This worker runs it; `attempts` counts this execution. */
  | { kind: 'run'; attempts: number }
  /** Another worker holds a live lease, or the occurrence already ended: do nothing. */
  | { kind: 'skip'; status: RunStatus };

/** Which occurrence to claim, for whom, and on what terms. */
export interface ClaimRequest {
  readonly taskId: string;
  /** The occurrence's due time, epoch ms. */
  readonly scheduledAt: number;
  readonly userId: string;
  /** The claiming worker's id (recorded on the run). */
  readonly worker: string;
  /** How long the claim holds without renewal. */
  readonly leaseMs: number;
  /** Only a `confirmed` occurrence may start (the task's run mode is `require-confirmation`). */
  readonly requireConfirmed: boolean;
}

/**
 * Occurrences in the durable store. Every transition is one conditional UPDATE (or an INSERT
 * that conflicts), so two workers that got the same occurrence (BullMQ redelivery, a confirmed
 * run racing a retry) cannot both run it: one statement wins, the other sees zero rows.
 */
export class RunRepository {
  constructor(private readonly db: Queryable) {}

  async get(taskId: string, scheduledAt: number): Promise<RunRecord | undefined> {
    const { rows } = await this.db.query<RunRow>(
      'SELECT * FROM scheduled_task_runs WHERE task_id = $1 AND scheduled_at = $2',
      [taskId, new Date(scheduledAt)],
    );
    return rows[0] ? toRecord(rows[0]) : undefined;
  }

  async listForTask(taskId: string, limit = 20): Promise<RunRecord[]> {
    const { rows } = await this.db.query<RunRow>(
      `SELECT * FROM scheduled_task_runs WHERE task_id = $1 ORDER BY scheduled_at DESC LIMIT $2`,
      [taskId, limit],
    );
    return rows.map(toRecord);
  }

  /**
   * The newest `perTask` runs of each of `taskIds`, in one query (a listing of many tasks),
   * newest first per task. Tasks without runs get an empty list.
   */
  async listForTasks(taskIds: readonly string[], perTask = 20): Promise<Map<string, RunRecord[]>> {
    const byTask = new Map<string, RunRecord[]>(taskIds.map((id) => [id, []]));
    if (taskIds.length === 0) return byTask;
    const { rows } = await this.db.query<RunRow>(
      `SELECT * FROM (
         SELECT *, row_number() OVER (PARTITION BY task_id ORDER BY scheduled_at DESC) AS nth
         FROM scheduled_task_runs WHERE task_id = ANY($1::text[])
       ) newest
       WHERE nth <= $2 ORDER BY task_id, scheduled_at DESC`,
      [taskIds, perTask],
    );
    for (const row of rows) byTask.get(row.task_id)?.push(toRecord(row));
    return byTask;
  }

  /** Creates the occurrence waiting for confirmation. @returns false when it already exists. */
  async createAwaiting(
    taskId: string,
    scheduledAt: number,
    userId: string,
    expiresAt: number,
  ): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `INSERT INTO scheduled_task_runs (task_id, scheduled_at, user_id, status, expires_at)
       VALUES ($1, $2, $3, 'awaiting_confirmation', $4) ON CONFLICT DO NOTHING`,
      [taskId, new Date(scheduledAt), userId, new Date(expiresAt)],
    );
    return rowCount > 0;
  }

  /**
   * Answers a confirmation. Only the user who owns the occurrence, only while it waits and has
   * not expired. @returns the new status, or undefined when nothing waited.
   */
  async answer(
    taskId: string,
    scheduledAt: number,
    userId: string,
    confirm: boolean,
  ): Promise<'confirmed' | 'declined' | undefined> {
    const status = confirm ? 'confirmed' : 'declined';
    const { rowCount } = await this.db.query(
      `UPDATE scheduled_task_runs SET status = $4, updated_at = now(),
         finished_at = CASE WHEN $4 = 'declined' THEN now() ELSE NULL END
       WHERE task_id = $1 AND scheduled_at = $2 AND user_id = $3
         AND status = 'awaiting_confirmation' AND expires_at > now()`,
      [taskId, new Date(scheduledAt), userId, status],
    );
    return rowCount > 0 ? status : undefined;
  }

  /** Expires a confirmation nobody answered. @returns whether it was still waiting. */
  async expire(taskId: string, scheduledAt: number): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `UPDATE scheduled_task_runs SET status = 'expired', updated_at = now(), finished_at = now()
       WHERE task_id = $1 AND scheduled_at = $2 AND status = 'awaiting_confirmation'`,
      [taskId, new Date(scheduledAt)],
    );
    return rowCount > 0;
  }

  /**
   * Claims an occurrence for execution with a lease. New (auto) or `confirmed` occurrences are
   * taken; a `running` one only when its lease expired (its worker died mid-run), which counts
   * another attempt. Anything else is skipped.
   */
  async claim(occurrence: ClaimRequest): Promise<Claim> {
    const { taskId, scheduledAt, userId, worker, leaseMs, requireConfirmed } = occurrence;
    const at = new Date(scheduledAt);
    if (!requireConfirmed) {
      const inserted = await this.db.query<{ attempts: number }>(
        `INSERT INTO scheduled_task_runs (task_id, scheduled_at, user_id, status, attempts, worker, lease_until)
         VALUES ($1, $2, $3, 'running', 1, $4, now() + make_interval(secs => $5))
         ON CONFLICT DO NOTHING RETURNING attempts`,
        [taskId, at, userId, worker, leaseMs / 1000],
      );
      if (inserted.rows[0]) return { kind: 'run', attempts: inserted.rows[0].attempts };
    }
    const { rows } = await this.db.query<{ attempts: number }>(
      `UPDATE scheduled_task_runs
       SET status = 'running', attempts = attempts + 1, worker = $3,
           lease_until = now() + make_interval(secs => $4), updated_at = now()
       WHERE task_id = $1 AND scheduled_at = $2
         AND (status = 'confirmed' OR (status = 'running' AND lease_until < now()))
       RETURNING attempts`,
      [taskId, at, worker, leaseMs / 1000],
    );
    if (rows[0]) return { kind: 'run', attempts: rows[0].attempts };
    const current = await this.get(taskId, scheduledAt);
    return { kind: 'skip', status: current?.status ?? 'expired' };
  }

  /** Extends the lease of a run this worker holds. @returns false once another worker took it. */
  async renew(taskId: string, scheduledAt: number, worker: string, leaseMs: number) {
    const { rowCount } = await this.db.query(
      `UPDATE scheduled_task_runs SET lease_until = now() + make_interval(secs => $4)
       WHERE task_id = $1 AND scheduled_at = $2 AND worker = $3 AND status = 'running'`,
      [taskId, new Date(scheduledAt), worker, leaseMs / 1000],
    );
    return rowCount > 0;
  }

  /**
   * Gives up this worker's lease of a run it did not finish, so the next attempt claims it at
   * once instead of after the lease. @returns false when this worker no longer held it.
   */
  async release(taskId: string, scheduledAt: number, worker: string): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `UPDATE scheduled_task_runs SET lease_until = now() - interval '1 second', updated_at = now()
       WHERE task_id = $1 AND scheduled_at = $2 AND worker = $3 AND status = 'running'`,
      [taskId, new Date(scheduledAt), worker],
    );
    return rowCount > 0;
  }

  /** Records the outcome, only if this worker still holds the run. */
  async finish(
    taskId: string,
    scheduledAt: number,
    worker: string,
    outcome: { status: 'succeeded' | 'failed'; output?: string; error?: string },
  ): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `UPDATE scheduled_task_runs SET status = $4, output = $5, error = $6, lease_until = NULL,
         finished_at = now(), updated_at = now()
       WHERE task_id = $1 AND scheduled_at = $2 AND worker = $3 AND status = 'running'`,
      [
        taskId,
        new Date(scheduledAt),
        worker,
        outcome.status,
        outcome.output ?? null,
        outcome.error ?? null,
      ],
    );
    return rowCount > 0;
  }

  /** Marks the results delivered. @returns false when they already were (deliver once). */
  async markNotified(taskId: string, scheduledAt: number): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `UPDATE scheduled_task_runs SET notified_at = now()
       WHERE task_id = $1 AND scheduled_at = $2 AND notified_at IS NULL`,
      [taskId, new Date(scheduledAt)],
    );
    return rowCount > 0;
  }
}
