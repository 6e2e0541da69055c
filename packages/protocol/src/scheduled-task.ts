import { z } from 'zod';
import { boundedJson } from './json-bounds.js';

/**
 * One notification channel: `true`/`false` to switch it on or off, or an object with its
 * settings (the spec does not describe them, so they are kept whole).
 */
const NotificationChannel = z.union([z.boolean(), z.looseObject({})]);

/**
 * Where to tell the user about a run (spec 2.8). The spec names the chat-platform key with a
 * placeholder, so both platform names are typed and any other key is kept as sent.
 */
export const NotificationConfig = boundedJson(
  z.looseObject({
    email: NotificationChannel.optional(),
    lark: NotificationChannel.optional(),
    feishu: NotificationChannel.optional(),
    inApp: NotificationChannel.optional(),
  }),
  // Kept whole and stored with the task: bounded like any free-form value a client sends.
  { maxChars: 16 * 1024, maxDepth: 16 },
);
export type NotificationConfig = z.infer<typeof NotificationConfig>;

/**
 * A scheduled task as the web layer syncs it (spec 2.8). `run_mode`, `repeat_type`, `connector`
 * and `status` are free text with the spec's defaults because their values are not shown yet;
 * `scheduled_date`, `scheduled_time` and `timezone` are plain strings for the same reason.
 */
export const ScheduledTask = z.object({
  id: z.string().min(1),
  user_id: z.string().min(1),
  title: z.string().min(1),
  prompt: z.string().min(1),
  /** @default 'require-confirmation' */
  run_mode: z.string().min(1).default('require-confirmation'),
  /** @default 'no-repeat' */
  repeat_type: z.string().min(1).default('no-repeat'),
  scheduled_date: z.string().optional(),
  /** @default '12:00' */
  scheduled_time: z.string().default('12:00'),
  /** @default 'UTC' */
  timezone: z.string().default('UTC'),
  /** @default 'my-browser' */
  connector: z.string().min(1).default('my-browser'),
  /** @default 'pending' */
  status: z.string().min(1).default('pending'),
  notification_config: NotificationConfig.optional(),
});
export type ScheduledTask = z.infer<typeof ScheduledTask>;
export type ScheduledTaskInput = z.input<typeof ScheduledTask>;

/** What the sync request does to the scheduler (spec 4.6). */
export const TaskSyncAction = z.enum(['add', 'remove', 'update']);
export type TaskSyncAction = z.infer<typeof TaskSyncAction>;

/**
 * Body of `POST /scheduled-task/sync` (spec 4.6). `task` is required for `add` and `update` and
 * optional (ignored) for `remove`; when present, its `id` must be `task_id`, so the scheduler
 * never files a task under another task's id.
 */
export const TaskSyncRequest = z
  .object({
    action: TaskSyncAction,
    task_id: z.string().min(1),
    task: ScheduledTask.optional(),
  })
  .superRefine((value, ctx) => {
    if (value.task === undefined) {
      if (value.action !== 'remove') {
        ctx.addIssue({
          code: 'custom',
          path: ['task'],
          message: `task is required when action is "${value.action}"`,
        });
      }
    } else if (value.task.id !== value.task_id) {
      ctx.addIssue({ code: 'custom', path: ['task', 'id'], message: 'task.id must equal task_id' });
    }
  });
export type TaskSyncRequest = z.infer<typeof TaskSyncRequest>;
export type TaskSyncRequestInput = z.input<typeof TaskSyncRequest>;

/** 200 answer of the sync endpoint. */
export const TaskSyncResponse = z.object({
  success: z.boolean(),
  action: TaskSyncAction,
  task_id: z.string(),
});
export type TaskSyncResponse = z.infer<typeof TaskSyncResponse>;

/**
 * Service-side status of a task (spec 3.4 shows only `pending`; the transitions are in
 * docs/scheduled-tasks.md).
 */
export const ScheduledTaskStatus = z.enum([
  'pending',
  'awaiting_confirmation',
  'running',
  'completed',
  'failed',
  'expired',
  'paused',
  'cancelled',
  'removed',
]);
export type ScheduledTaskStatus = z.infer<typeof ScheduledTaskStatus>;

/** Status of one occurrence of a task (docs/scheduled-tasks.md). */
export const ScheduledTaskRunStatus = z.enum([
  'awaiting_confirmation',
  'confirmed',
  'running',
  'succeeded',
  'failed',
  'declined',
  'expired',
]);
export type ScheduledTaskRunStatus = z.infer<typeof ScheduledTaskRunStatus>;

/** One occurrence of a task; times are ISO 8601. */
export const ScheduledTaskRun = z.object({
  scheduled_at: z.string(),
  status: ScheduledTaskRunStatus,
  attempts: z.number().int().nonnegative(),
  output: z.string().nullable(),
  error: z.string().nullable(),
  finished_at: z.string().nullable(),
});
export type ScheduledTaskRun = z.infer<typeof ScheduledTaskRun>;

/**
 * 200 answer of `GET /scheduled-task/:taskId` (internal, beyond the spec): the stored task, its
 * status and its recent occurrences, newest first.
 */
export const ScheduledTaskDetails = z.object({
  task_id: z.string(),
  status: ScheduledTaskStatus,
  next_run_at: z.string().nullable(),
  task: ScheduledTask,
  runs: z.array(ScheduledTaskRun),
});
export type ScheduledTaskDetails = z.infer<typeof ScheduledTaskDetails>;

/**
 * Body of `POST /scheduled-task/confirm` (bearer token; the user comes from the token):
 * the occurrence (`task_id` + `scheduled_at` as sent in the in-app message) and the answer.
 */
export const ConfirmRunRequest = z.object({
  task_id: z.string().min(1),
  scheduled_at: z.iso.datetime({ offset: true }),
  /** @default true */
  confirm: z.boolean().default(true),
});
export type ConfirmRunRequest = z.infer<typeof ConfirmRunRequest>;
export type ConfirmRunRequestInput = z.input<typeof ConfirmRunRequest>;

/** 200 answer of `POST /scheduled-task/confirm`: the occurrence's new status. */
export const ConfirmRunResponse = z.object({
  success: z.literal(true),
  task_id: z.string(),
  scheduled_at: z.string(),
  status: z.enum(['confirmed', 'declined']),
});
export type ConfirmRunResponse = z.infer<typeof ConfirmRunResponse>;

/**
 * 200 answer of `GET /api/scheduled-tasks` (beyond the spec: the caller's own tasks, each as
 * {@link ScheduledTaskDetails} with its latest occurrences, for a web client such as the
 * playground; removed tasks are left out).
 */
export const ScheduledTaskList = z.object({ tasks: z.array(ScheduledTaskDetails) });
export type ScheduledTaskList = z.infer<typeof ScheduledTaskList>;
