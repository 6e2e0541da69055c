import { z } from 'zod';
import { url, batchSize } from './env-fields.js';

/** Days a kind of data is kept by the retention sweep; `0`: forever. */
const retentionDays = (days: number) => z.coerce.number().int().min(0).max(36_500).default(days);

/**
 * What happens to work and data over time: notification email, job queues, the retention sweep,
 * run logs.
 */
export const lifecycleEnv = {
  SMTP_URL: url(['smtp:', 'smtps:']).describe(
    '`smtp://` or `smtps://` (credentials in the URL) for scheduled-task email notifications; unset: email channels are logged and skipped (see [`scheduled-tasks.md`](scheduled-tasks.md))',
  ),
  EMAIL_FROM: z
    .string()
    .min(1)
    .default('Agent Backend <no-reply@localhost>')
    .describe('sender of notification emails'),
  JOBS_LOCK_MS: z.coerce
    .number()
    .int()
    .min(500)
    .default(30_000)
    .describe(
      'BullMQ job lock: a job whose worker died (or stopped renewing) is delivered again after about this long',
    ),
  JOBS_KEEP_COMPLETED_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(86_400_000)
    .describe(
      'a completed job is deleted from its queue once it is this old (checked when a later job of the queue completes); while kept, its id deduplicates adds (see [`operations.md`](operations.md#job-retention))',
    ),
  JOBS_KEEP_COMPLETED_COUNT: z.coerce
    .number()
    .int()
    .min(0)
    .default(1_000)
    .describe(
      'at most this many completed jobs are kept per queue, the newest; `0` deletes each at once',
    ),
  JOBS_KEEP_FAILED_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(7 * 86_400_000)
    .describe(
      'a job whose every attempt failed is deleted from its queue once it is this old (checked when a later job of the queue fails); kept for the queue dashboard',
    ),
  JOBS_KEEP_FAILED_COUNT: z.coerce
    .number()
    .int()
    .min(0)
    .default(5_000)
    .describe('at most this many failed jobs are kept per queue, the newest'),
  RETENTION_SESSIONS_DAYS: retentionDays(0).describe(
    'agent sessions (with their messages, runs, approvals, todo list and sandbox) whose last activity is older than this many days are deleted by the retention sweep; a session with a run going (even one waiting for an approval) or used during the sweep is kept. `0`: kept forever (see Retention in [operations.md](operations.md#retention))',
  ),
  RETENTION_TASK_RUNS_DAYS: retentionDays(90).describe(
    'finished scheduled-task runs (their occurrence records: output, error, status) older than this many days are deleted by the retention sweep; the tasks themselves stay. `0`: kept forever',
  ),
  RETENTION_KNOWLEDGE_DOCUMENTS_DAYS: retentionDays(0).describe(
    'knowledge documents untouched (not uploaded again or re-ingested) for this many days are deleted with their chunks by the retention sweep; their knowledge base stays. `0`: kept forever',
  ),
  RETENTION_MEMORIES_DAYS: retentionDays(0).describe(
    'long-term memories not saved again for this many days are deleted by the retention sweep. `0` (default): never, since users rely on what the agent remembers',
  ),
  AUDIT_LOG_RETENTION_DAYS: retentionDays(365).describe(
    'audit log events older than this many days are deleted by the retention sweep. `0`: kept forever',
  ),
  RETENTION_SWEEP_INTERVAL_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(3_600_000)
    .describe(
      'how often one worker (elected per interval in the ephemeral store; the all-in-one in process) runs the retention sweep',
    ),
  RETENTION_BATCH_SIZE: batchSize(500).describe(
    'rows (sessions, task runs, documents, memories, audit events) each statement of the retention sweep deletes at most; a session goes with all its messages, so with long sessions a lower value spreads the work (see [BENCHMARKS.md](BENCHMARKS.md)); the sweep pauses briefly between batches',
  ),
  RUN_LOG_RETENTION_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(600_000)
    .describe(
      "how long a run's events stay in the run log after its last event, so a dropped stream can resume (`Last-Event-ID`) on any replica; the stored conversation is not affected",
    ),
  SCHEDULED_TASK_CONFIRM_TTL_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(86_400_000)
    .describe(
      "how long a `require-confirmation` run waits for the user's answer before it expires",
    ),
};
