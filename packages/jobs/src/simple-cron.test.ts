import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nextCronOccurrence, nextCronParserOccurrence } from './cron.js';
import { parseSimpleCron } from './simple-cron.js';
import { zoneOffsetMs } from './zoned-time.js';

/** Zones with 1-hour daylight-saving changes away from midnight, and some without any. */
const ZONES = [
  'UTC',
  'America/New_York',
  'America/Los_Angeles',
  'America/St_Johns',
  'America/Sao_Paulo',
  'Europe/Berlin',
  'Europe/London',
  'Australia/Sydney',
  'Pacific/Auckland',
  'Asia/Tokyo',
  'Asia/Kolkata',
  'Asia/Kathmandu',
];
/** Daylight-saving changes of America/New_York, Europe/Berlin and Australia/Sydney. */
const CHANGES = [
  '2024-03-10T07:00Z',
  '2024-11-03T06:00Z',
  '2026-03-08T07:00Z',
  '2026-11-01T06:00Z',
  '2025-03-30T01:00Z',
  '2025-10-26T01:00Z',
  '2026-03-29T01:00Z',
  '2026-10-25T01:00Z',
  '2025-04-05T16:00Z',
  '2025-10-04T16:00Z',
  '2026-04-04T16:00Z',
  '2026-10-03T16:00Z',
].map((iso) => Date.parse(iso));
const HOUR = 3_600_000;

const timeOfDay = fc.record({
  hour: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 23 })),
  minute: fc.oneof(fc.constantFrom(0, 30), fc.integer({ min: 0, max: 59 })),
  second: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 59 })),
});
/** The day fields the scheduler generates: daily, weekdays, weekly, monthly, one date. */
const dayFields = fc.oneof(
  fc.constant('* * *'),
  fc.constant('* * 1-5'),
  fc.integer({ min: 0, max: 6 }).map((d) => `* * ${d}`),
  fc.oneof(fc.integer({ min: 1, max: 31 }), fc.constantFrom(29, 30, 31)).map((d) => `${d} * *`),
  fc
    .tuple(fc.integer({ min: 1, max: 28 }), fc.integer({ min: 1, max: 12 }))
    .map(([d, m]) => `${d} ${m} *`),
);
const pattern = fc
  .tuple(timeOfDay, dayFields)
  .map(([t, days]) => `${t.second} ${t.minute} ${t.hour} ${days}`);
const start = fc.oneof(
  fc.integer({ min: Date.parse('2000-01-01T00:00Z'), max: Date.parse('2040-01-01T00:00Z') }),
  fc
    .tuple(fc.constantFrom(...CHANGES), fc.integer({ min: -48 * HOUR, max: 48 * HOUR }))
    .map(([at, shift]) => at + shift),
  fc
    .tuple(fc.constantFrom(...CHANGES), fc.integer({ min: -48, max: 48 }))
    .map(([at, hours]) => at + hours * HOUR),
);
/** Whether a daylight-saving change happened in the hour up to `at` (where cron-parser errs). */
const justAfterChange = (at: number, tz: string) =>
  zoneOffsetMs(at - HOUR, tz) !== zoneOffsetMs(at, tz);

describe('nextCronOccurrence fast path', () => {
  it('recognises the patterns the scheduler generates and leaves others to cron-parser', () => {
    expect(parseSimpleCron('0 30 14 * * 1-5')).toEqual({
      second: 0,
      minute: 30,
      hour: 14,
      weekdays: new Set([1, 2, 3, 4, 5]),
    });
    expect(parseSimpleCron('30 14 31 * *')).toEqual({
      second: 0,
      minute: 30,
      hour: 14,
      dayOfMonth: 31,
    });
    expect(parseSimpleCron('0 0 9 * * 0-7')).toEqual({ second: 0, minute: 0, hour: 9 });
    for (const other of [
      '*/5 * * * *',
      '0 0 9-17 * * *',
      '0 0 9 1 * 1',
      '0 0 9 L * *',
      '0 0 24 * * *',
    ])
      expect(parseSimpleCron(other)).toBeUndefined();
  });

  it('agrees with cron-parser on random zones, times and dates, DST days included', () => {
    fc.assert(
      fc.property(fc.constantFrom(...ZONES), pattern, start, (tz, p, from) => {
        fc.pre(!justAfterChange(from, tz));
        expect(nextCronOccurrence({ pattern: p, tz }, from)).toBe(
          nextCronParserOccurrence({ pattern: p, tz }, from),
        );
      }),
      { numRuns: 300 },
    );
  });

  it('agrees with cron-parser on startDate and endDate bounds', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...ZONES),
        pattern,
        start,
        fc.integer({ min: -10 * 86_400_000, max: 10 * 86_400_000 }),
        fc.integer({ min: 0, max: 40 * 86_400_000 }),
        (tz, p, from, startShift, span) => {
          const startDate = from + startShift;
          const options = { pattern: p, tz, startDate, endDate: from + span };
          const begin = Math.max(from, startDate);
          fc.pre(!justAfterChange(begin, tz));
          expect(nextCronOccurrence(options, from)).toBe(nextCronParserOccurrence(options, begin));
        },
      ),
      { numRuns: 150 },
    );
  });

  it('falls back to cron-parser for other patterns', () => {
    const from = Date.parse('2026-03-08T06:58:00Z');
    for (const p of ['*/5 * * * *', '0 0 9-17 * * *', '0 15 10 L * *'])
      expect(nextCronOccurrence({ pattern: p, tz: 'America/New_York' }, from)).toBe(
        nextCronParserOccurrence({ pattern: p, tz: 'America/New_York' }, from),
      );
  });

  // Where cron-parser 4.9 starts inside a daylight-saving change it loses or doubles an
  // occurrence; the fast path keeps the documented rules (docs/scheduled-tasks.md).
  const at = (p: string, tz: string, from: string) =>
    new Date(nextCronOccurrence({ pattern: p, tz }, Date.parse(from))!).toISOString();

  it('moves a skipped time forward by the gap even when asked from inside the gap', () => {
    // New York 2026-03-08: 02:00 EST → 03:00 EDT. Daily 02:30 runs at 03:30 EDT that day.
    expect(at('0 30 2 * * *', 'America/New_York', '2026-03-08T06:59:00Z')).toBe(
      '2026-03-08T07:30:00.000Z',
    );
    expect(at('0 30 2 * * *', 'America/New_York', '2026-03-08T07:10:00Z')).toBe(
      '2026-03-08T07:30:00.000Z',
    );
    expect(at('0 30 2 * * *', 'Europe/Berlin', '2026-03-29T01:10:00Z')).toBe(
      '2026-03-29T01:30:00.000Z',
    );
    // Lord Howe moves 30 minutes (02:00 → 02:30); Santiago skips its midnight hour.
    expect(at('0 0 2 * * *', 'Australia/Lord_Howe', '2026-10-03T01:00:00Z')).toBe(
      '2026-10-03T15:30:00.000Z',
    );
    expect(at('0 50 0 6 9 *', 'America/Santiago', '2026-03-30T00:00:00Z')).toBe(
      '2026-09-06T04:50:00.000Z',
    );
  });

  it('runs a repeated time once, at its first instance, even when asked between the two', () => {
    // New York 2026-11-01: 02:00 EDT → 01:00 EST; 01:30 EDT is 05:30Z, 01:30 EST 06:30Z.
    expect(at('0 30 1 * * *', 'America/New_York', '2026-11-01T05:00:00Z')).toBe(
      '2026-11-01T05:30:00.000Z',
    );
    expect(at('0 30 1 * * *', 'America/New_York', '2026-11-01T05:30:00Z')).toBe(
      '2026-11-02T06:30:00.000Z',
    );
    expect(at('0 30 1 * * *', 'America/New_York', '2026-11-01T06:10:00Z')).toBe(
      '2026-11-02T06:30:00.000Z',
    );
    expect(at('0 30 2 * * *', 'Europe/Berlin', '2026-10-25T01:10:00Z')).toBe(
      '2026-10-26T01:30:00.000Z',
    );
  });

  it('skips months without the day and answers null past endDate', () => {
    expect(at('0 0 9 31 * *', 'Europe/Berlin', '2026-04-01T00:00:00Z')).toBe(
      '2026-05-31T07:00:00.000Z',
    );
    expect(at('0 0 9 29 2 *', 'UTC', '2097-01-01T00:00:00Z')).toBe('2104-02-29T09:00:00.000Z');
    const from = Date.parse('2026-04-01T00:00:00Z');
    expect(
      nextCronOccurrence(
        { pattern: '0 0 9 31 * *', tz: 'UTC', endDate: from + 40 * 86_400_000 },
        from,
      ),
    ).toBeNull();
    expect(nextCronOccurrence({ pattern: '0 0 9 31 2 *', tz: 'UTC' }, from)).toBeNull();
  });
});
