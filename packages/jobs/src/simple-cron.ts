import { wallTimeAt, wallTimeToInstant, wallTimeToUtcMs } from './zoned-time.js';

/**
 * A cron pattern that fires once a day at most, at one fixed time of day: every schedule the
 * service generates (`daily`, `weekdays`, `weekly`, `monthly`, and one-off wall-clock instants)
 * has this shape. Its next occurrence is a walk over calendar days plus one zone conversion.
 */
export interface SimpleCron {
  second: number;
  minute: number;
  hour: number;
  /** Day of the month 1-31, or `undefined` for any. */
  dayOfMonth?: number;
  /** Month 1-12, or `undefined` for any. */
  month?: number;
  /** Allowed weekdays (0 = Sunday), or `undefined` for any. */
  weekdays?: ReadonlySet<number>;
}

/**
 * How many calendar days the walk tries before it gives up (no occurrence). Eight years covers
 * the rarest satisfiable pattern here, 29 February, across a skipped leap year (2096 → 2104).
 * @default 2930
 */
export const MAX_DAYS = 2_930;

const DAY_MS = 86_400_000;
const NUMBER = /^\d{1,2}$/;

function single(field: string, min: number, max: number): number | undefined {
  if (!NUMBER.test(field)) return undefined;
  const value = Number(field);
  return value >= min && value <= max ? value : undefined;
}

function weekdaySet(field: string): Set<number> | undefined {
  const days = new Set<number>();
  for (const item of field.split(',')) {
    const range = /^(\d)(?:-(\d))?$/.exec(item);
    if (!range) return undefined;
    const from = Number(range[1]);
    const to = range[2] === undefined ? from : Number(range[2]);
    if (from > 7 || to > 7 || from > to) return undefined;
    for (let day = from; day <= to; day++) days.add(day % 7);
  }
  return days;
}

/**
 * Recognises a {@link SimpleCron} (5 fields, or 6 with seconds first), or returns `undefined`
 * so the caller falls back to a full cron parser. Patterns that restrict both the day of the
 * month and the weekday are left to the parser: cron ORs them, which this walk does not model.
 */
export function parseSimpleCron(pattern: string): SimpleCron | undefined {
  const fields = pattern.trim().split(/\s+/);
  if (fields.length === 5) fields.unshift('0');
  if (fields.length !== 6) return undefined;
  const [s, m, h, dom, mon, dow] = fields as [string, string, string, string, string, string];
  const second = single(s, 0, 59);
  const minute = single(m, 0, 59);
  const hour = single(h, 0, 23);
  if (second === undefined || minute === undefined || hour === undefined) return undefined;
  const cron: SimpleCron = { second, minute, hour };
  if (dom !== '*') {
    const value = single(dom, 1, 31);
    if (value === undefined) return undefined;
    cron.dayOfMonth = value;
  }
  if (mon !== '*') {
    const value = single(mon, 1, 12);
    if (value === undefined) return undefined;
    cron.month = value;
  }
  if (dow !== '*') {
    const days = weekdaySet(dow);
    if (days === undefined || cron.dayOfMonth !== undefined) return undefined;
    if (days.size < 7) cron.weekdays = days;
  }
  return cron;
}

/**
 * The first occurrence of `cron` in `tz` strictly after `afterMs`, no later than `endMs`, or
 * `null`. Each candidate day becomes an instant by {@link wallTimeToInstant}, so daylight-saving
 * rules are those of that function (skipped times move forward by the gap, repeated times are
 * their first instance).
 */
export function nextSimpleOccurrence(
  cron: SimpleCron,
  tz: string,
  afterMs: number,
  endMs?: number,
): number | null {
  const today = wallTimeAt(afterMs, tz);
  // Walk calendar days as UTC dates: pure arithmetic, no zone lookups until a day matches.
  let dayMs = wallTimeToUtcMs({ ...today, hour: 0, minute: 0, second: 0 });
  for (let i = 0; i < MAX_DAYS; i++, dayMs += DAY_MS) {
    const date = new Date(dayMs);
    const year = date.getUTCFullYear();
    const month = date.getUTCMonth() + 1;
    const day = date.getUTCDate();
    if (cron.month !== undefined && month !== cron.month) continue;
    if (cron.dayOfMonth !== undefined && day !== cron.dayOfMonth) continue;
    if (cron.weekdays !== undefined && !cron.weekdays.has(date.getUTCDay())) continue;
    const at = wallTimeToInstant(
      { year, month, day, hour: cron.hour, minute: cron.minute, second: cron.second },
      tz,
    );
    if (at <= afterMs) continue;
    return endMs !== undefined && at > endMs ? null : at;
  }
  return null;
}
