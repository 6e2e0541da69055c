import { nextCronOccurrence, type ScheduleTiming } from '@agent-backend/jobs';
import { ScheduledTask, type ScheduledTaskInput } from '@agent-backend/protocol';
import { describe, expect, it } from 'vitest';
import {
  PAST_GRACE_MS,
  planSchedule,
  scheduleIssues,
  wallTimeToInstant,
} from './schedule-rules.js';

const task = (fields: Partial<ScheduledTaskInput>) =>
  ScheduledTask.parse({ id: 't1', user_id: 'u1', title: 'T', prompt: 'P', ...fields });
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The first `count` occurrences of a plan, starting at an injected "now". */
function occurrences(fields: Partial<ScheduledTaskInput>, now: string, count: number): string[] {
  const plan = planSchedule(task(fields), Date.parse(now));
  if (plan.kind !== 'schedule') throw new Error('expected a schedule');
  const out = [plan.nextRunAt];
  const timing = plan.timing as Extract<ScheduleTiming, { kind: 'cron' }>;
  while (out.length < count) out.push(nextCronOccurrence(timing, out[out.length - 1]!)!);
  return out.map((ms) => iso(ms)!);
}

describe('schedule validation', () => {
  it('accepts the defaults and every documented value', () => {
    expect(scheduleIssues(task({}))).toEqual([]);
    for (const repeat_type of ['no-repeat', 'daily', 'weekdays', 'weekly', 'monthly'])
      expect(scheduleIssues(task({ repeat_type, run_mode: 'auto', connector: 'none' }))).toEqual(
        [],
      );
  });

  it('reports every invalid field with its path', () => {
    const issues = scheduleIssues(
      task({
        repeat_type: 'hourly',
        run_mode: 'sometimes',
        connector: 'my-phone',
        status: 'weird',
        scheduled_date: '2026-02-30',
        scheduled_time: '24:00',
        timezone: 'Mars/Olympus',
      }),
    );
    expect(issues.map((i) => i.path)).toEqual([
      'task.repeat_type',
      'task.run_mode',
      'task.connector',
      'task.status',
      'task.scheduled_date',
      'task.scheduled_time',
      'task.timezone',
    ]);
    expect(scheduleIssues(task({ scheduled_date: '26-1-1', scheduled_time: '9:00' }))).toHaveLength(
      2,
    );
  });
});

describe('occurrences', () => {
  it('puts a no-repeat task at its wall-clock instant in its zone', () => {
    const plan = planSchedule(
      task({ scheduled_date: '2026-07-01', scheduled_time: '09:15', timezone: 'Europe/Paris' }),
      Date.parse('2026-06-01T00:00:00Z'),
    );
    expect(plan).toMatchObject({ kind: 'schedule', timing: { kind: 'once' } });
    if (plan.kind === 'schedule') expect(iso(plan.nextRunAt)).toBe('2026-07-01T07:15:00.000Z');
  });

  it('defaults to 12:00 UTC, and without a date to the next time the clock shows it', () => {
    expect(occurrences({}, '2026-05-05T13:00:00Z', 1)).toEqual(['2026-05-06T12:00:00.000Z']);
    expect(occurrences({}, '2026-05-05T11:00:00Z', 1)).toEqual(['2026-05-05T12:00:00.000Z']);
  });

  it('runs a no-repeat time just past at once, and expires one older than the grace', () => {
    const now = Date.parse('2026-05-05T12:03:00Z');
    const recent = planSchedule(task({ scheduled_date: '2026-05-05' }), now);
    expect(recent).toMatchObject({ kind: 'schedule', nextRunAt: now });
    const old = planSchedule(task({ scheduled_date: '2026-05-05' }), now + PAST_GRACE_MS);
    expect(old).toEqual({ kind: 'expired', at: Date.parse('2026-05-05T12:00:00Z') });
  });

  it('keeps a daily 12:00 at noon local time across both New York DST changes', () => {
    const ny = { repeat_type: 'daily', scheduled_time: '12:00', timezone: 'America/New_York' };
    expect(occurrences(ny, '2026-03-07T00:00:00Z', 3)).toEqual([
      '2026-03-07T17:00:00.000Z', // EST, UTC-5
      '2026-03-08T16:00:00.000Z', // EDT, UTC-4: the spring-forward day
      '2026-03-09T16:00:00.000Z',
    ]);
    expect(occurrences(ny, '2026-10-31T00:00:00Z', 3)).toEqual([
      '2026-10-31T16:00:00.000Z',
      '2026-11-01T17:00:00.000Z', // fall-back day, EST again
      '2026-11-02T17:00:00.000Z',
    ]);
  });

  it('runs 02:30 at 03:00 on the spring-forward day, and 01:30 once on the fall-back day', () => {
    const at = (time: string, from: string) =>
      occurrences(
        { repeat_type: 'daily', scheduled_time: time, timezone: 'America/New_York' },
        from,
        3,
      );
    expect(at('02:30', '2026-03-07T00:00:00Z')).toEqual([
      '2026-03-07T07:30:00.000Z',
      '2026-03-08T07:00:00.000Z', // 02:30 does not exist: the end of the gap, 03:00 EDT
      '2026-03-09T06:30:00.000Z',
    ]);
    expect(at('01:30', '2026-10-31T00:00:00Z')).toEqual([
      '2026-10-31T05:30:00.000Z',
      '2026-11-01T05:30:00.000Z', // the first 01:30 (EDT) only
      '2026-11-02T06:30:00.000Z',
    ]);
    expect(iso(wallTimeToInstant('2026-03-08', '02:30', 'America/New_York'))).toBe(
      '2026-03-08T07:00:00.000Z',
    );
  });

  it('repeats weekdays Monday to Friday, weekly on the start date weekday', () => {
    const weekdays = occurrences(
      { repeat_type: 'weekdays', scheduled_date: '2026-05-08', scheduled_time: '08:00' },
      '2026-05-01T00:00:00Z',
      3,
    );
    expect(weekdays).toEqual([
      '2026-05-08T08:00:00.000Z', // Friday: not before the start date
      '2026-05-11T08:00:00.000Z',
      '2026-05-12T08:00:00.000Z',
    ]);
    const weekly = occurrences(
      { repeat_type: 'weekly', scheduled_date: '2026-05-06', timezone: 'Asia/Tokyo' },
      '2026-05-01T00:00:00Z',
      2,
    );
    expect(weekly).toEqual(['2026-05-06T03:00:00.000Z', '2026-05-13T03:00:00.000Z']);
  });

  it('skips months without the day of a monthly task', () => {
    expect(
      occurrences(
        { repeat_type: 'monthly', scheduled_date: '2026-01-31', scheduled_time: '10:00' },
        '2026-01-01T00:00:00Z',
        4,
      ),
    ).toEqual([
      '2026-01-31T10:00:00.000Z',
      '2026-03-31T10:00:00.000Z',
      '2026-05-31T10:00:00.000Z',
      '2026-07-31T10:00:00.000Z',
    ]);
  });
});
