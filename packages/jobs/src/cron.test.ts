import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assertValidCron, cronRepeatStrategy, nextCronOccurrence } from './cron.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const next = (pattern: string, tz: string, from: string) =>
  iso(nextCronOccurrence({ pattern, tz }, Date.parse(from)));

/** The wall-clock time `instant` shows in `tz`, as `YYYY-MM-DD HH:mm:ss`. */
function wallClock(instant: number, tz: string): string {
  return new Intl.DateTimeFormat('sv-SE', {
    timeZone: tz,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).format(instant);
}

/** `[pattern, zone, asked from, next occurrence]` rows, by what they show. */
type Row = readonly [pattern: string, tz: string, from: string, expected: string];
const OCCURRENCES: Record<string, readonly Row[]> = {
  'computes the schedules the service generates in their zones': [
    // daily 09:00 in Tokyo (UTC+9, no daylight saving)
    ['0 0 9 * * *', 'Asia/Tokyo', '2026-04-30T20:00:00Z', '2026-05-01T00:00:00.000Z'],
    // weekdays 08:30 in New York: Friday 2026-05-08, then Monday
    ['0 30 8 * * 1-5', 'America/New_York', '2026-05-08T13:00:00Z', '2026-05-11T12:30:00.000Z'],
    // weekly on Friday 18:00 in Paris (CEST, UTC+2)
    ['0 0 18 * * 5', 'Europe/Paris', '2026-05-04T00:00:00Z', '2026-05-08T16:00:00.000Z'],
    // a half-hour zone and a 45-minute one
    ['0 0 9 * * *', 'Asia/Kolkata', '2026-05-01T00:00:00Z', '2026-05-01T03:30:00.000Z'],
    ['0 0 9 * * *', 'Asia/Kathmandu', '2026-05-01T00:00:00Z', '2026-05-01T03:15:00.000Z'],
    // five fields: minutes first, second 0
    ['30 14 * * *', 'UTC', '2026-05-01T00:00:00Z', '2026-05-01T14:30:00.000Z'],
  ],
  'answers strictly after the start instant': [
    ['0 0 9 * * *', 'UTC', '2026-04-01T09:00:00Z', '2026-04-02T09:00:00.000Z'],
    ['0 0 9 * * *', 'UTC', '2026-04-01T08:59:59.500Z', '2026-04-01T09:00:00.000Z'],
  ],
  'follows the zone across daylight-saving changes': [
    // daily 12:00 in New York: 17:00 UTC before 2026-03-08, 16:00 UTC after
    ['0 0 12 * * *', 'America/New_York', '2026-03-07T00:00:00Z', '2026-03-07T17:00:00.000Z'],
    ['0 0 12 * * *', 'America/New_York', '2026-03-08T00:00:00Z', '2026-03-08T16:00:00.000Z'],
  ],
  'runs a time skipped by a spring-forward change at the end of the gap, that day': [
    // New York 2026-03-08: 02:00 EST → 03:00 EDT; 02:30 runs at 03:00 EDT (07:00Z).
    ['0 30 2 * * *', 'America/New_York', '2026-03-08T06:59:00Z', '2026-03-08T07:00:00.000Z'],
    // Asked after that run: the next day's 02:30 EDT.
    ['0 30 2 * * *', 'America/New_York', '2026-03-08T07:10:00Z', '2026-03-09T06:30:00.000Z'],
    // Berlin 2026-03-29: 02:00 CET → 03:00 CEST.
    ['0 30 2 * * *', 'Europe/Berlin', '2026-03-29T00:00:00Z', '2026-03-29T01:00:00.000Z'],
    // Lord Howe moves 30 minutes (02:00 → 02:30); Santiago skips its midnight hour.
    ['0 0 2 * * *', 'Australia/Lord_Howe', '2026-10-03T01:00:00Z', '2026-10-03T15:30:00.000Z'],
    ['0 50 0 6 9 *', 'America/Santiago', '2026-03-30T00:00:00Z', '2026-09-06T04:00:00.000Z'],
  ],
  'runs a repeated time once, at its first instance, even when asked between the two': [
    // New York 2026-11-01: 02:00 EDT → 01:00 EST; 01:30 EDT is 05:30Z, 01:30 EST 06:30Z.
    ['0 30 1 * * *', 'America/New_York', '2026-11-01T05:00:00Z', '2026-11-01T05:30:00.000Z'],
    ['0 30 1 * * *', 'America/New_York', '2026-11-01T05:30:00Z', '2026-11-02T06:30:00.000Z'],
    ['0 30 1 * * *', 'America/New_York', '2026-11-01T06:10:00Z', '2026-11-02T06:30:00.000Z'],
    ['0 30 2 * * *', 'Europe/Berlin', '2026-10-25T00:10:00Z', '2026-10-25T00:30:00.000Z'],
    ['0 30 2 * * *', 'Europe/Berlin', '2026-10-25T01:10:00Z', '2026-10-26T01:30:00.000Z'],
  ],
};

describe('nextCronOccurrence', () => {
  for (const [title, rows] of Object.entries(OCCURRENCES)) {
    it(title, () => {
      for (const [pattern, tz, from, expected] of rows) {
        expect(next(pattern, tz, from), `${pattern} in ${tz} after ${from}`).toBe(expected);
      }
    });
  }

  it('skips months without the day, and answers null past endDate or for a date that never comes', () => {
    expect(next('0 0 9 31 * *', 'Europe/Berlin', '2026-04-01T00:00:00Z')).toBe(
      '2026-05-31T07:00:00.000Z',
    );
    // 2100 is not a leap year
    expect(next('0 0 9 29 2 *', 'UTC', '2097-01-01T00:00:00Z')).toBe('2104-02-29T09:00:00.000Z');
    const from = Date.parse('2026-04-01T00:00:00Z');
    expect(
      nextCronOccurrence(
        { pattern: '0 0 9 31 * *', tz: 'UTC', endDate: from + 40 * 86_400_000 },
        from,
      ),
    ).toBeNull();
    expect(nextCronOccurrence({ pattern: '0 0 9 31 2 *', tz: 'UTC' }, from)).toBeNull();
  });

  it('starts at startDate when that is later, like BullMQ', () => {
    const from = Date.parse('2026-04-01T00:00:00Z');
    const startDate = Date.parse('2026-04-10T12:00:00Z');
    expect(iso(nextCronOccurrence({ pattern: '0 0 9 * * *', tz: 'UTC', startDate }, from))).toBe(
      '2026-04-11T09:00:00.000Z',
    );
    expect(
      cronRepeatStrategy(from, { pattern: '0 0 9 * * *', startDate: new Date(startDate) }),
    ).toBe(Date.parse('2026-04-11T09:00:00.000Z'));
    expect(cronRepeatStrategy(from, {})).toBeUndefined();
  });

  it('computes patterns beyond one time of day', () => {
    expect(next('*/5 * * * *', 'America/New_York', '2026-03-08T06:58:00Z')).toBe(
      '2026-03-08T07:00:00.000Z',
    );
    expect(next('0 0 9-17 * * *', 'UTC', '2026-04-01T17:30:00Z')).toBe('2026-04-02T09:00:00.000Z');
    expect(next('0 15 10 L * *', 'UTC', '2026-04-01T00:00:00Z')).toBe('2026-04-30T10:15:00.000Z');
  });

  it('shows the pattern time on the wall clock of the zone, daylight-saving days included', () => {
    const zones = [
      'UTC',
      'America/New_York',
      'America/Sao_Paulo',
      'Europe/Berlin',
      'Australia/Sydney',
      'Asia/Kathmandu',
    ];
    fc.assert(
      fc.property(
        fc.constantFrom(...zones),
        fc.integer({ min: 0, max: 23 }),
        fc.integer({ min: 0, max: 59 }),
        fc.integer({ min: Date.parse('2024-01-01T00:00Z'), max: Date.parse('2030-01-01T00:00Z') }),
        (tz, hour, minute, from) => {
          const at = nextCronOccurrence({ pattern: `0 ${minute} ${hour} * * *`, tz }, from)!;
          expect(at).toBeGreaterThan(from);
          expect(at - from).toBeLessThanOrEqual(26 * 3_600_000);
          const shown = wallClock(at, tz).slice(11);
          const wanted = `${String(hour).padStart(2, '0')}:${String(minute).padStart(2, '0')}:00`;
          // Only a time skipped by a change shows otherwise: the end of the gap, later that day.
          if (shown !== wanted) {
            expect(shown > wanted).toBe(true);
            expect(wallClock(at - 1_000, tz).slice(0, 10)).toBe(wallClock(at, tz).slice(0, 10));
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('assertValidCron', () => {
  it('accepts valid patterns and names what is wrong otherwise', () => {
    expect(() => assertValidCron('0 30 8 * * 1-5', 'Europe/Paris')).not.toThrow();
    expect(() => assertValidCron('0 30 8 * * 1-5', 'Mars/Olympus')).toThrow(
      'unknown time zone: Mars/Olympus',
    );
    expect(() => assertValidCron('0 61 8 * * *', 'UTC')).toThrow();
    expect(() => assertValidCron('not a pattern', 'UTC')).toThrow();
  });
});
