import { createHash, timingSafeEqual } from 'node:crypto';
import {
  ConfirmRunRequest,
  ConfirmRunResponse,
  ScheduledTaskDetails,
  ScheduledTaskList,
  TaskSyncRequest,
  TaskSyncResponse,
} from '@agent-backend/protocol';
import { AppError, authHook, type RouteDocs } from '@agent-backend/http-server';
import type { ServiceContext } from '@agent-backend/runtime';
import {
  InvalidScheduleError,
  RunRepository,
  SCHEDULED_TASKS_QUEUE,
  TaskRepository,
  occurrenceId,
  syncTask,
  type RunRecord,
  type TaskJob,
  type TaskRecord,
} from '@agent-backend/scheduler';

/** Most tasks `GET /api/scheduled-tasks` answers, and occurrences shown per task. */
const LIST_TASKS = 50;
const LIST_RUNS = 10;

function taskView(record: TaskRecord, runs: RunRecord[]): ScheduledTaskDetails {
  return {
    task_id: record.taskId,
    status: record.status,
    next_run_at: record.nextRunAt?.toISOString() ?? null,
    task: record.task,
    runs: runs.map((run) => ({
      scheduled_at: run.scheduledAt.toISOString(),
      status: run.status,
      attempts: run.attempts,
      output: run.output,
      error: run.error,
      finished_at: run.finishedAt?.toISOString() ?? null,
    })),
  };
}

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * A hook (listed as auth `internal`) that checks `X-Internal-Secret` against
 * `INTERNAL_API_SECRET` in constant time (both sides are hashed first, so neither the value nor
 * its length leaks through timing). 503 when no secret is configured: the endpoint is off rather
 * than open.
 */
function requireInternalSecret(secret: string | undefined) {
  const expected = secret === undefined ? undefined : digest(secret);
  return authHook('internal', async (request) => {
    if (!expected) throw new AppError('not_configured', 'INTERNAL_API_SECRET is not configured');
    const given = request.headers['x-internal-secret'];
    if (typeof given !== 'string' || !timingSafeEqual(digest(given), expected))
      throw new AppError('unauthorized', 'missing or invalid X-Internal-Secret');
  });
}

/**
 * `POST /scheduled-task/sync` (spec 4.6), `GET /scheduled-task/:taskId` (internal, beyond the
 * spec: the stored status and recent occurrences), `GET /api/scheduled-tasks` (beyond the spec:
 * the caller's own tasks, bearer token) and `POST /scheduled-task/confirm` (the user's
 * answer to a `require-confirmation` occurrence, bearer token). See docs/scheduled-tasks.md.
 */
export function registerScheduledTaskRoutes(context: ServiceContext): void {
  const { app, engines, config, requireUser } = context;
  const internal = requireInternalSecret(config.INTERNAL_API_SECRET);
  const deps = { db: engines.db, jobs: engines.jobs };

  app.post(
    '/scheduled-task/sync',
    {
      body: TaskSyncRequest,
      preHandler: internal,
      doc: {
        tag: 'scheduled tasks',
        summary: 'Add, update or remove a scheduled task (internal)',
        description: 'Called by the web layer. An unusable schedule is a 400 with field errors.',
        responses: { 200: { description: 'Synced.', json: TaskSyncResponse } },
      },
    },
    async (request) => {
      const body = request.body;
      try {
        const result = await syncTask(deps, body);
        request.log.info(
          { taskId: body.task_id, action: body.action, status: result.status },
          'scheduled task synced',
        );
        return {
          success: result.success,
          action: body.action,
          task_id: body.task_id,
        } satisfies TaskSyncResponse;
      } catch (error) {
        if (error instanceof InvalidScheduleError)
          throw new AppError('invalid_request', 'invalid request body', error.issues);
        throw error;
      }
    },
  );

  app.get(
    '/scheduled-task/:taskId',
    {
      preHandler: internal,
      doc: {
        tag: 'scheduled tasks',
        summary: 'A scheduled task, its status and recent occurrences (internal)',
        parameters: [{ in: 'path', name: 'taskId', description: 'The task.' }],
        responses: { 200: { description: 'The task.', json: ScheduledTaskDetails } },
        errors: ['not_found'],
      },
    },
    async (request) => {
      const record = await new TaskRepository(engines.db).get(request.params.taskId);
      if (!record) throw new AppError('not_found', 'unknown task');
      return taskView(record, await new RunRepository(engines.db).listForTask(record.taskId));
    },
  );

  // The caller's own tasks (the token's user): what a web client shows.
  app.get(
    '/api/scheduled-tasks',
    {
      preHandler: requireUser,
      doc: {
        tag: 'scheduled tasks',
        summary: "The caller's own scheduled tasks",
        description:
          "The token's user's tasks (removed ones left out), most recently changed first, at most " +
          '50, each with its 10 latest occurrences, newest first.',
        responses: { 200: { description: 'The tasks.', json: ScheduledTaskList } },
      },
    },
    async (request) => {
      const records = await new TaskRepository(engines.db).listForUser(request.userId, LIST_TASKS);
      const runs = await new RunRepository(engines.db).listForTasks(
        records.map((record) => record.taskId),
        LIST_RUNS,
      );
      const tasks = records.map((record) => taskView(record, runs.get(record.taskId) ?? []));
      return { tasks } satisfies ScheduledTaskList;
    },
  );

  const confirm = {
    body: ConfirmRunRequest,
    preHandler: requireUser,
    doc: {
      tag: 'scheduled tasks',
      summary: 'Confirm or decline an occurrence that waits for the user',
      description:
        'The answer to a `scheduled_task_confirmation` WebSocket message. 404 when no occurrence ' +
        "of the task waits for this user (answered, expired, or another user's).",
      responses: { 200: { description: 'Answered.', json: ConfirmRunResponse } },
      errors: ['not_found'],
    } satisfies RouteDocs,
  };
  app.post('/scheduled-task/confirm', confirm, async (request) => {
    const body = request.body;
    const scheduledAt = Date.parse(body.scheduled_at);
    const status = await new RunRepository(engines.db).answer(
      body.task_id,
      scheduledAt,
      request.userId,
      body.confirm,
    );
    if (!status)
      throw new AppError('not_found', 'no occurrence of this task is waiting for confirmation');
    if (status === 'confirmed') {
      const job: TaskJob = { kind: 'confirmed', taskId: body.task_id, scheduledAt };
      await engines.jobs.add(SCHEDULED_TASKS_QUEUE, job, {
        jobId: `confirmed-${occurrenceId(body.task_id, scheduledAt)}`,
      });
    }
    return {
      success: true,
      task_id: body.task_id,
      scheduled_at: body.scheduled_at,
      status,
    } satisfies ConfirmRunResponse;
  });
}
