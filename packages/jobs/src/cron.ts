import cronParser from 'cron-parser';

/** The options cron-parser is given by both adapters (BullMQ passes the same ones). */
export interface CronOptions {
  pattern: string;
  tz: string;
  startDate?: number;
  endDate?: number;
}

/**
 * The first occurrence of a cron schedule strictly after `afterMs`, or `null` when there is none
 * (past `endDate`). Mirrors BullMQ's default repeat strategy (`getNextMillis`): evaluation starts
 * at `startDate` when that is later, and cron-parser 4.9 resolves the zone's daylight-saving
 * rules. Both job adapters call this, so the in-process default fires when BullMQ would.
 */
export function nextCronOccurrence(options: CronOptions, afterMs: number): number | null {
  const start =
    options.startDate !== undefined && options.startDate > afterMs ? options.startDate : afterMs;
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

/** Throws the parser's message when `pattern` or `tz` is not valid. */
export function assertValidCron(pattern: string, tz: string): void {
  cronParser.parseExpression(pattern, { tz });
  if (!isValidTimeZone(tz)) throw new Error(`unknown time zone: ${tz}`);
}

/** Whether `tz` names an IANA time zone this Node.js knows. */
export function isValidTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}
