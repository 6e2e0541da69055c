/**
 * Wall-clock time in IANA zones without a date library: offsets come from one cached
 * `Intl.DateTimeFormat` per zone, so converting costs a few microseconds instead of the
 * milliseconds cron-parser 4.9 spends stepping a luxon `DateTime` through every field.
 */

/** A calendar date and time of day as a clock in some zone shows it. Months are 1-12. */
export interface WallTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

const DAY_MS = 86_400_000;
const formatters = new Map<string, Intl.DateTimeFormat>();

/** One formatter per zone: constructing one costs far more than formatting with it. */
function formatterOf(tz: string): Intl.DateTimeFormat {
  let formatter = formatters.get(tz);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      era: 'short',
    });
    formatters.set(tz, formatter);
  }
  return formatter;
}

/** The wall-clock time `instant` (epoch ms) shows in `tz`, to the second. */
export function wallTimeAt(instant: number, tz: string): WallTime {
  const wall: WallTime = { year: 0, month: 1, day: 1, hour: 0, minute: 0, second: 0 };
  let bc = false;
  for (const part of formatterOf(tz).formatToParts(instant)) {
    switch (part.type) {
      case 'year':
        wall.year = Number(part.value);
        break;
      case 'month':
        wall.month = Number(part.value);
        break;
      case 'day':
        wall.day = Number(part.value);
        break;
      case 'hour':
        wall.hour = Number(part.value);
        break;
      case 'minute':
        wall.minute = Number(part.value);
        break;
      case 'second':
        wall.second = Number(part.value);
        break;
      case 'era':
        bc = part.value === 'BC' || part.value === 'B';
        break;
    }
  }
  if (bc) wall.year = 1 - wall.year;
  return wall;
}

/** `wall` read as if it were UTC, in epoch ms: the arithmetic form of a wall-clock time. */
export function wallTimeToUtcMs(wall: WallTime): number {
  const date = new Date(0);
  date.setUTCFullYear(wall.year, wall.month - 1, wall.day);
  date.setUTCHours(wall.hour, wall.minute, wall.second, 0);
  return date.getTime();
}

/** How far `tz`'s clock is ahead of UTC at `instant`, in ms (whole seconds). */
export function zoneOffsetMs(instant: number, tz: string): number {
  const whole = Math.floor(instant / 1000) * 1000;
  return wallTimeToUtcMs(wallTimeAt(whole, tz)) - whole;
}

/**
 * The instant a wall-clock time names in `tz`. A time skipped by a spring-forward change
 * (02:30 when clocks jump from 02:00 to 03:00) moves forward by the gap (03:30); a time that
 * occurs twice on a fall-back day is its first instance. These are the rules the scheduled
 * tasks document, and what cron-parser 4.9 (BullMQ's) yields when it steps onto such a day.
 *
 * The offsets a day either side bound the answer; no zone changes its offset twice within
 * two days, so the two candidates below are the only ones.
 */
export function wallTimeToInstant(wall: WallTime, tz: string): number {
  const local = wallTimeToUtcMs(wall);
  const before = zoneOffsetMs(local - DAY_MS, tz);
  const after = zoneOffsetMs(local + DAY_MS, tz);
  const early = local - before;
  if (before === after) return early;
  const late = local - after;
  const earlyValid = zoneOffsetMs(early, tz) === before;
  const lateValid = zoneOffsetMs(late, tz) === after;
  if (earlyValid && lateValid) return Math.min(early, late);
  if (earlyValid) return early;
  if (lateValid) return late;
  // In a gap: the offset in force before it carries the clock past the jump by the gap's size.
  return early;
}

/** Day of the week of a calendar date, 0 = Sunday (as cron counts). */
export function weekdayOf(year: number, month: number, day: number): number {
  return new Date(
    wallTimeToUtcMs({ year, month, day, hour: 12, minute: 0, second: 0 }),
  ).getUTCDay();
}
