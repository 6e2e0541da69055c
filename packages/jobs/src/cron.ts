import { Cron } from 'croner';
import { isValidTimeZone } from './time-zone.js';

/** The repeat options of a cron schedule, as both adapters (and BullMQ) receive them. */
export interface CronOptions {
  pattern: string;
  tz: string;
  startDate?: number;
  endDate?: number;
}

/**
 * Parsed schedules by zone and pattern: a service uses a handful of shapes per task, and a
 * croner `Cron` takes its start instant per call, so one object serves every call.
 */
const crons = new Map<string, Cron>();
const CACHE_LIMIT = 10_000;

function cronOf(pattern: string, tz: string): Cron {
  const key = `${tz}\n${pattern}`;
  let cron = crons.get(key);
  if (!cron) {
    // `paused`: only its arithmetic is used, it must never start a timer of its own.
    cron = new Cron(pattern, { timezone: tz, paused: true });
    if (crons.size >= CACHE_LIMIT) crons.clear();
    crons.set(key, cron);
  }
  return cron;
}

/**
 * The first occurrence of a cron schedule strictly after `afterMs`, or `null` when there is none
 * (past `endDate`, or a date that never comes, like 31 February). Mirrors BullMQ's repeat
 * strategy: evaluation starts at `startDate` when that is later. Both job adapters call this
 * (BullMQ through {@link cronRepeatStrategy}), so the in-process default fires when BullMQ does.
 *
 * Computed by croner (measured within 2× of the service's former direct computation, see
 * docs/BENCHMARKS.md). Its daylight-saving rules for a pattern with one fixed time of day (all
 * the service generates): a time skipped by a spring-forward change runs at the first valid
 * time after the gap, the same day (02:30 → 03:00); a time that occurs twice runs once, at its
 * first instance.
 */
export function nextCronOccurrence(options: CronOptions, afterMs: number): number | null {
  const start =
    options.startDate !== undefined && options.startDate > afterMs ? options.startDate : afterMs;
  const next = cronOf(options.pattern, options.tz).nextRun(new Date(start));
  if (!next) return null;
  const at = next.getTime();
  return options.endDate !== undefined && at > options.endDate ? null : at;
}

/**
 * A BullMQ `settings.repeatStrategy` (for both `Queue` and `Worker`) that computes occurrences
 * with {@link nextCronOccurrence}, so BullMQ (whose default is cron-parser, ~10× slower and with
 * other daylight-saving rules) never disagrees with the in-process adapter. BullMQ calls it
 * with the instant to start from and the scheduler's repeat options.
 */
export function cronRepeatStrategy(
  millis: number,
  opts: {
    pattern?: string;
    tz?: string;
    startDate?: Date | string | number;
    endDate?: Date | string | number;
  },
): number | undefined {
  if (opts.pattern === undefined) return undefined;
  const at = nextCronOccurrence(
    {
      pattern: opts.pattern,
      tz: opts.tz ?? 'UTC',
      ...(opts.startDate !== undefined ? { startDate: new Date(opts.startDate).getTime() } : {}),
      ...(opts.endDate !== undefined ? { endDate: new Date(opts.endDate).getTime() } : {}),
    },
    millis,
  );
  return at ?? undefined;
}

/** Throws a message naming the problem when `pattern` or `tz` is not valid. */
export function assertValidCron(pattern: string, tz: string): void {
  if (!isValidTimeZone(tz)) throw new Error(`unknown time zone: ${tz}`);
  cronOf(pattern, tz);
}
