import { scheduledRunSessionId } from '@agent-backend/agent-runtime';
import {
  inJobSpan,
  UnrecoverableJobError,
  type JobContext,
  type JobQueue,
} from '@agent-backend/jobs';
import type { Logger } from '@agent-backend/logger';
import type { Notifier } from '@agent-backend/notify';
import { isDependencyUnavailable } from '@agent-backend/protocol';
import {
  RunRepository,
  SCHEDULED_TASKS_QUEUE,
  TaskJob,
  TaskRepository,
  occurrenceId,
  planSchedule,
  type TaskRecord,
} from '@agent-backend/scheduler';
import type { Database } from '@agent-backend/store';
import type { TaskAgent } from './task-agent.js';
import { TaskAgentError } from './task-agent.js';

export interface TaskProcessorOptions {
  db: Database;
  jobs: JobQueue;
  logger: Logger;
  agent: TaskAgent;
  notifier: Notifier;
  /** This replica, recorded as the holder of a run's lease. */
  workerId: string;
  /** How long a confirmation waits. */
  confirmTtlMs: number;
  /** Lease of a running occurrence, renewed at a third of it; a dead worker's run is taken over after it. */
  leaseMs: number;
}

/**
 * The handler of the scheduled-tasks queue. Idempotent per occurrence (task id + instant):
 * every step is a conditional write to `scheduled_task_runs`, so a job delivered twice (BullMQ
 * redelivery after a stall, two replicas) runs the agent once per live lease and notifies once.
 */
export function createTaskProcessor(options: TaskProcessorOptions) {
  const tasks = new TaskRepository(options.db);
  const runs = new RunRepository(options.db);
  const log = options.logger;

  const afterOccurrence = async (
    record: TaskRecord,
    outcome: 'succeeded' | 'failed' | 'skipped',
  ) => {
    if (record.task.repeat_type === 'no-repeat') {
      const status =
        outcome === 'succeeded' ? 'completed' : outcome === 'failed' ? 'failed' : 'expired';
      await tasks.setStatus(record.taskId, status, null, record.task);
      return;
    }
    const plan = planSchedule(record.task, Date.now());
    await tasks.setStatus(
      record.taskId,
      'pending',
      plan.kind === 'schedule' ? plan.nextRunAt : null,
      record.task,
    );
  };

  const execute = async (record: TaskRecord, scheduledAt: number, context: JobContext) => {
    const { signal } = context;
    const claim = await runs.claim({
      taskId: record.taskId,
      scheduledAt,
      userId: record.userId,
      worker: options.workerId,
      leaseMs: options.leaseMs,
      requireConfirmed: record.task.run_mode === 'require-confirmation',
    });
    const ctx = { taskId: record.taskId, scheduledAt: new Date(scheduledAt).toISOString() };
    if (claim.kind === 'skip' && claim.status === 'running') {
      // Another attempt holds an unexpired lease: a worker still running it, or an attempt of
      // this job that failed after its claim (the store went away before `finish`). Completing
      // the job here left such an occurrence `running` for good (tests/faults/
      // postgres-restart.test.ts); failing the attempt retries it after the backoff, and a
      // retry past the lease takes the run over.
      throw new Error('scheduled run is held by an unexpired lease; retrying later');
    }
    if (claim.kind === 'skip') {
      log.info({ ...ctx, status: claim.status }, 'scheduled run skipped: already handled');
      return;
    }
    await tasks.setStatus(
      record.taskId,
      'running',
      record.nextRunAt?.getTime() ?? null,
      record.task,
    );
    const renew = setInterval(() => {
      void runs
        .renew(record.taskId, scheduledAt, options.workerId, options.leaseMs)
        .catch((error: unknown) => log.warn({ ...ctx, err: error }, 'lease renewal failed'));
    }, options.leaseMs / 3);
    let outcome: { status: 'succeeded' | 'failed'; output?: string; error?: string };
    try {
      log.info({ ...ctx, attempt: claim.attempts }, 'scheduled run started');
      const { text } = await options.agent.run({
        userId: record.userId,
        prompt: record.task.prompt,
        sessionId: scheduledRunSessionId(record.taskId, scheduledAt, claim.attempts),
        connector: record.task.connector,
        signal,
      });
      outcome = { status: 'succeeded', output: text };
    } catch (error) {
      if (signal.aborted) throw error; // shutting down: leave the lease to expire; retried
      if (context.attempt < context.attempts && hitOutage(error)) {
        // The database or Redis was unreachable during the run: not the task's failure. The
        // job's next attempt (after its backoff) runs it again, in a new session.
        clearInterval(renew);
        await runs
          .release(record.taskId, scheduledAt, options.workerId)
          .catch((releaseError: unknown) =>
            log.warn(
              { ...ctx, err: releaseError },
              'could not release the run; retried after its lease',
            ),
          );
        log.warn(
          { ...ctx, err: error, attempt: context.attempt },
          'scheduled run hit an outage; retrying',
        );
        throw new Error('scheduled run hit an outage of the database or Redis; retrying', {
          cause: error,
        });
      }
      const code = error instanceof TaskAgentError ? error.message : 'the agent run failed';
      if (!(error instanceof TaskAgentError))
        log.error({ ...ctx, err: error }, 'scheduled run failed');
      outcome = { status: 'failed', error: code };
    } finally {
      clearInterval(renew);
    }
    if (!(await runs.finish(record.taskId, scheduledAt, options.workerId, outcome))) {
      log.warn(ctx, 'scheduled run finished after another worker took it over; result dropped');
      return;
    }
    log.info({ ...ctx, status: outcome.status }, 'scheduled run finished');
    await afterOccurrence(record, outcome.status);
    if (await runs.markNotified(record.taskId, scheduledAt)) {
      const iso = new Date(scheduledAt).toISOString();
      await options.notifier.notify(record.task.notification_config, {
        userId: record.userId,
        subject: `${outcome.status === 'succeeded' ? 'Done' : 'Failed'}: ${record.task.title}`,
        text: outcome.output ?? outcome.error ?? '',
        inApp: {
          type: 'scheduled_task_result',
          task_id: record.taskId,
          scheduled_at: iso,
          title: record.task.title,
          success: outcome.status === 'succeeded',
          output: outcome.output ?? '',
          ...(outcome.error ? { error: outcome.error } : {}),
        },
      });
    }
  };

  const askConfirmation = async (record: TaskRecord, scheduledAt: number) => {
    const expiresAt = scheduledAt + options.confirmTtlMs;
    const created = await runs.createAwaiting(record.taskId, scheduledAt, record.userId, expiresAt);
    if (!created) return; // redelivered: the question was already asked
    await tasks.setStatus(
      record.taskId,
      'awaiting_confirmation',
      record.nextRunAt?.getTime() ?? null,
      record.task,
    );
    const job: TaskJob = { kind: 'confirmation_timeout', taskId: record.taskId, scheduledAt };
    await options.jobs.add(SCHEDULED_TASKS_QUEUE, job, {
      jobId: `timeout-${occurrenceId(record.taskId, scheduledAt)}`,
      delayMs: Math.max(0, expiresAt - Date.now()),
    });
    const iso = new Date(scheduledAt).toISOString();
    await options.notifier.notify(record.task.notification_config, {
      userId: record.userId,
      subject: `Confirm: ${record.task.title}`,
      text: `The scheduled task "${record.task.title}" is due. Open the app to confirm or decline it before ${new Date(expiresAt).toISOString()}.\n\n${record.task.prompt}`,
      inApp: {
        type: 'scheduled_task_confirmation',
        task_id: record.taskId,
        scheduled_at: iso,
        title: record.task.title,
        prompt: record.task.prompt,
        expires_at: new Date(expiresAt).toISOString(),
      },
    });
    log.info({ taskId: record.taskId, scheduledAt: iso }, 'scheduled run awaits confirmation');
  };

  const handle = async (job: TaskJob, context: JobContext): Promise<void> => {
    const record = await tasks.get(job.taskId);
    if (!record || record.status === 'removed') {
      log.info({ taskId: job.taskId }, 'job of a removed task skipped');
      return;
    }
    if (job.kind === 'due') {
      if (context.scheduledAt === undefined)
        throw new UnrecoverableJobError('due job without occurrence');
      if (
        record.status === 'paused' ||
        record.status === 'cancelled' ||
        record.status === 'expired'
      )
        return;
      if (record.task.run_mode === 'require-confirmation') {
        const existing = await runs.get(record.taskId, context.scheduledAt);
        if (!existing || existing.status === 'awaiting_confirmation') {
          await askConfirmation(record, context.scheduledAt);
          return;
        }
      }
      await execute(record, context.scheduledAt, context);
    } else if (job.kind === 'confirmed') {
      await execute(record, job.scheduledAt, context);
    } else if (await runs.expire(record.taskId, job.scheduledAt)) {
      log.info({ taskId: record.taskId }, 'confirmation expired');
      await afterOccurrence(record, 'skipped');
    }
  };

  return (data: unknown, context: JobContext): Promise<void> => {
    const parsed = TaskJob.safeParse(data);
    if (!parsed.success) throw new UnrecoverableJobError('invalid scheduled-task job payload');
    const job = parsed.data;
    // The run continues the trace of the request that scheduled it (`POST /scheduled-task/sync`).
    return inJobSpan(
      `scheduled-task ${job.kind}`,
      job.trace,
      { 'agent_backend.task.id': job.taskId, 'agent_backend.job.kind': job.kind },
      () => handle(job, context),
    );
  };
}

/**
 * Whether a scheduled run failed because the database or Redis could not be reached: its agent
 * run ended with `unavailable`, or a store call of the run threw such an error.
 */
function hitOutage(error: unknown): boolean {
  return (
    (error instanceof TaskAgentError && error.code === 'unavailable') ||
    isDependencyUnavailable(error)
  );
}
