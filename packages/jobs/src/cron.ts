import cronParser from 'cron-parser';
import { nextSimpleOccurrence, parseSimpleCron, type SimpleCron } from './simple-cron.js';

/** The options cron-parser is given by both adapters (BullMQ passes the same ones). */
export interface CronOptions {
  pattern: string;
  tz: string;
  startDate?: number;
  endDate?: number;
}

/** Parsed patterns by text (`null`: not simple); a service uses a handful of shapes per task. */
const simpleCache = new Map<string, SimpleCron | null>();
const SIMPLE_CACHE_LIMIT = 10_000;

function simpleOf(pattern: string): SimpleCron | undefined {
  let cron = simpleCache.get(pattern);
  if (cron === undefined) {
    cron = parseSimpleCron(pattern) ?? null;
    if (simpleCache.size >= SIMPLE_CACHE_LIMIT) simpleCache.clear();
    simpleCache.set(pattern, cron);
  }
  return cron ?? undefined;
}

/**
 * The first occurrence of a cron schedule strictly after `afterMs`, or `null` when there is none
 * (past `endDate`). Mirrors BullMQ's default repeat strategy (`getNextMillis`): evaluation starts
 * at `startDate` when that is later. Both job adapters call this, so the in-process default
 * fires when BullMQ would.
 *
 * Patterns with one fixed time of day (all the service generates) take a direct computation
 * with cached `Intl` offsets, about a thousand times cheaper than cron-parser 4.9, whose
 * time-zone-aware `next()` steps a luxon date through every field (8-25 ms each on a loaded
 * 2-core machine). It agrees with cron-parser except where cron-parser starts inside a
 * daylight-saving change; see docs/scheduled-tasks.md. Any other pattern goes to cron-parser.
 */
export function nextCronOccurrence(options: CronOptions, afterMs: number): number | null {
  const start =
    options.startDate !== undefined && options.startDate > afterMs ? options.startDate : afterMs;
  const simple = simpleOf(options.pattern);
  if (simple) return nextSimpleOccurrence(simple, options.tz, start, options.endDate);
  return nextCronParserOccurrence(options, start);
}

/** cron-parser's answer for `options` strictly after `start` (the fallback, and the reference). */
export function nextCronParserOccurrence(options: CronOptions, start: number): number | null {
  const interval = cronParser.parseExpression(options.pattern, {
    currentDate: new Date(start),
    tz: options.tz,
    ...(options.endDate !== undefined ? { endDate: new Date(options.endDate) } : {}),
  });
  // Not `hasNext()`: in cron-parser 4.9 it disturbs the iterator's state around DST changes
  // (02:30 on the day before a spring-forward came out as 03:30). `next()` throws past `endDate`.
  try {
    return interval.next().getTime();
  } catch {
    return null;
  }
}

/**
 * A BullMQ `settings.repeatStrategy` (for both `Queue` and `Worker`) that computes occurrences
 * with {@link nextCronOccurrence}, so BullMQ neither pays cron-parser's cost on every
 * `upsertJobScheduler` and every fired occurrence, nor disagrees with the in-process adapter.
 * BullMQ calls it with the instant to start from and the scheduler's repeat options.
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

/** Throws the parser's message when `pattern` or `tz` is not valid. */
export function assertValidCron(pattern: string, tz: string): void {
  cronParser.parseExpression(pattern, { tz });
  if (!isValidTimeZone(tz)) throw new Error(`unknown time zone: ${tz}`);
}

const knownZones = new Set<string>();

/** Whether `tz` names an IANA time zone this Node.js knows (known ones are remembered). */
export function isValidTimeZone(tz: string): boolean {
  if (knownZones.has(tz)) return true;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
  } catch {
    return false;
  }
  if (knownZones.size < SIMPLE_CACHE_LIMIT) knownZones.add(tz);
  return true;
}
