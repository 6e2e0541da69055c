import {
  dateIn,
  isValidTimeZone,
  nextCronOccurrence,
  type ScheduleTiming,
} from '@agent-backend/jobs';
import type { ScheduledTask } from '@agent-backend/protocol';

/** Accepted `repeat_type` values (docs/scheduled-tasks.md). */
export const REPEAT_TYPES = ['no-repeat', 'daily', 'weekdays', 'weekly', 'monthly'] as const;
export type RepeatType = (typeof REPEAT_TYPES)[number];
/** `require-confirmation` asks the user first; `auto` runs at once. */
export const RUN_MODES = ['require-confirmation', 'auto'] as const;
export type RunMode = (typeof RUN_MODES)[number];
/** `my-browser` gives the agent the user's browser-extension tools; `none` gives it no node tools. */
export const CONNECTORS = ['my-browser', 'none'] as const;
/** Statuses the web layer may sync: only `pending` is scheduled, the others are kept inactive. */
export const SYNC_STATUSES = ['pending', 'paused', 'completed', 'cancelled', 'failed'] as const;

/**
 * A `no-repeat` instant at most this far in the past when synced still runs (at once): the web
 * layer's clock and minute-granular times make "now" arrive slightly late. Older: `expired`.
 */
export const PAST_GRACE_MS = 5 * 60_000;

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIME = /^([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?$/;

export interface ScheduleIssue {
  path: string;
  message: string;
}

/** Checks the fields the spec leaves as free text; paths are relative to the request body. */
export function scheduleIssues(task: ScheduledTask): ScheduleIssue[] {
  const issues: ScheduleIssue[] = [];
  const oneOf = (field: keyof ScheduledTask, allowed: readonly string[]) => {
    const value = task[field];
    if (typeof value === 'string' && !allowed.includes(value))
      issues.push({ path: `task.${field}`, message: `must be one of: ${allowed.join(', ')}` });
  };
  oneOf('repeat_type', REPEAT_TYPES);
  oneOf('run_mode', RUN_MODES);
  oneOf('connector', CONNECTORS);
  oneOf('status', SYNC_STATUSES);
  if (task.scheduled_date !== undefined && !parseDate(task.scheduled_date))
    issues.push({ path: 'task.scheduled_date', message: 'must be a date as YYYY-MM-DD' });
  if (!TIME.test(task.scheduled_time))
    issues.push({ path: 'task.scheduled_time', message: 'must be a time as HH:mm (24 h)' });
  if (!isValidTimeZone(task.timezone))
    issues.push({ path: 'task.timezone', message: 'must be an IANA time zone, e.g. Europe/Paris' });
  return issues;
}

function parseDate(value: string): { y: number; m: number; d: number } | undefined {
  const match = DATE.exec(value);
  if (!match) return undefined;
  const [y, m, d] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(y, m - 1, d));
  if (date.getUTCFullYear() !== y || date.getUTCMonth() !== m - 1 || date.getUTCDate() !== d)
    return undefined;
  return { y, m, d };
}

function parseTime(value: string): { h: number; min: number; s: number } {
  const match = TIME.exec(value);
  if (!match) throw new Error(`invalid time: ${value}`);
  return { h: Number(match[1]), min: Number(match[2]), s: Number(match[3] ?? 0) };
}

/**
 * The instant a wall-clock date and time name in `tz`. Computed by `nextCronOccurrence`, as the
 * schedules are, so a time that does not exist (02:30 on a spring-forward day) is the end of the
 * gap (03:00) and an ambiguous one (01:30 on a fall-back day) is its first instance.
 */
export function wallTimeToInstant(date: string, time: string, tz: string): number {
  const day = parseDate(date);
  if (!day) throw new Error(`invalid date: ${date}`);
  const t = parseTime(time);
  const pattern = `${t.s} ${t.min} ${t.h} ${day.d} ${day.m} *`;
  const from = Date.UTC(day.y, day.m - 1, day.d) - 15 * 3_600_000;
  const at = nextCronOccurrence({ pattern, tz }, from);
  if (at === null) throw new Error(`no instant for ${date} ${time} in ${tz}`);
  return at;
}

/** What to do with a task's schedule now. */
export type SchedulePlan =
  | { kind: 'schedule'; timing: ScheduleTiming; nextRunAt: number }
  /** A `no-repeat` instant already more than {@link PAST_GRACE_MS} in the past. */
  | { kind: 'expired'; at: number };

/**
 * Turns a validated task into job timing. `no-repeat` with a date is that instant; without a
 * date, the next time the clock shows `scheduled_time` in the zone. Repeating tasks start on
 * `scheduled_date` (today when absent); `weekly` repeats on that date's weekday and `monthly` on
 * its day of the month, skipping months without that day (as RFC 5545 and cron do).
 */
export function planSchedule(task: ScheduledTask, nowMs: number): SchedulePlan {
  const tz = task.timezone;
  const t = parseTime(task.scheduled_time);
  const repeat = task.repeat_type as RepeatType;
  if (repeat === 'no-repeat') {
    if (task.scheduled_date === undefined) {
      const pattern = `${t.s} ${t.min} ${t.h} * * *`;
      const at = nextCronOccurrence({ pattern, tz }, nowMs)!;
      return { kind: 'schedule', timing: { kind: 'once', at }, nextRunAt: at };
    }
    const at = wallTimeToInstant(task.scheduled_date, task.scheduled_time, tz);
    if (at < nowMs - PAST_GRACE_MS) return { kind: 'expired', at };
    return { kind: 'schedule', timing: { kind: 'once', at }, nextRunAt: Math.max(at, nowMs) };
  }
  const startDay = task.scheduled_date ?? dateIn(nowMs, tz);
  const day = parseDate(startDay)!;
  let dayFields: string;
  if (repeat === 'daily') dayFields = '* * *';
  else if (repeat === 'weekdays') dayFields = '* * 1-5';
  else if (repeat === 'weekly')
    dayFields = `* * ${new Date(Date.UTC(day.y, day.m - 1, day.d)).getUTCDay()}`;
  else dayFields = `${day.d} * *`;
  const pattern = `${t.s} ${t.min} ${t.h} ${dayFields}`;
  const timing: ScheduleTiming = { kind: 'cron', pattern, tz };
  if (task.scheduled_date !== undefined)
    timing.startDate = wallTimeToInstant(task.scheduled_date, '00:00', tz) - 1_000;
  const nextRunAt = nextCronOccurrence(timing, nowMs);
  if (nextRunAt === null) throw new Error(`schedule ${pattern} has no occurrence`);
  return { kind: 'schedule', timing, nextRunAt };
}
