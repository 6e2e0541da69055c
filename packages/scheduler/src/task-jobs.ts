import { z } from 'zod';
import { JobTraceContext } from '@agent-backend/protocol';

/** The queue every scheduled-task job goes through. */
export const SCHEDULED_TASKS_QUEUE = 'scheduled-tasks';

/**
 * Payloads of {@link SCHEDULED_TASKS_QUEUE}, validated by the worker before it acts:
 * - `due`: a schedule fired (the occurrence instant comes from the job context);
 * - `confirmed`: the user confirmed an occurrence; run it;
 * - `confirmation_timeout`: the confirmation window of an occurrence closed.
 */
export const TaskJob = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('due'),
    taskId: z.string().min(1),
    trace: JobTraceContext.optional(),
  }),
  z.object({
    kind: z.literal('confirmed'),
    taskId: z.string().min(1),
    scheduledAt: z.number().int(),
    trace: JobTraceContext.optional(),
  }),
  z.object({
    kind: z.literal('confirmation_timeout'),
    taskId: z.string().min(1),
    scheduledAt: z.number().int(),
    trace: JobTraceContext.optional(),
  }),
]);
export type TaskJob = z.infer<typeof TaskJob>;

/** Stable id of one occurrence, used in messages, URLs and job ids: `<taskId>@<ISO instant>`. */
export function occurrenceId(taskId: string, scheduledAt: number): string {
  return `${taskId}@${new Date(scheduledAt).toISOString()}`;
}

/** Moved to the protocol package with the other HTTP bodies; re-exported for existing imports. */
export { ConfirmRunRequest } from '@agent-backend/protocol';
