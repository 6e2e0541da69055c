import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { wallTimeAt, wallTimeToInstant, zoneOffsetMs } from './zoned-time.js';

describe('zoned time', () => {
  it('reads offsets, including half-hour zones and both sides of a change', () => {
    expect(zoneOffsetMs(Date.parse('2026-01-15T12:00Z'), 'America/New_York')).toBe(-5 * 3_600_000);
    expect(zoneOffsetMs(Date.parse('2026-07-15T12:00Z'), 'America/New_York')).toBe(-4 * 3_600_000);
    expect(zoneOffsetMs(Date.parse('2026-07-15T12:00Z'), 'Asia/Kathmandu')).toBe(20_700_000);
    expect(wallTimeAt(Date.parse('2026-03-08T07:00:00Z'), 'America/New_York')).toEqual({
      year: 2026,
      month: 3,
      day: 8,
      hour: 3,
      minute: 0,
      second: 0,
    });
  });

  it('maps wall times to instants: gaps forward, repeats to the first instance', () => {
    const wall = (day: number, month: number, hour: number, minute: number) => ({
      year: 2026,
      month,
      day,
      hour,
      minute,
      second: 0,
    });
    const iso = (ms: number) => new Date(ms).toISOString();
    expect(iso(wallTimeToInstant(wall(8, 3, 2, 30), 'America/New_York'))).toBe(
      '2026-03-08T07:30:00.000Z',
    );
    expect(iso(wallTimeToInstant(wall(1, 11, 1, 30), 'America/New_York'))).toBe(
      '2026-11-01T05:30:00.000Z',
    );
    expect(iso(wallTimeToInstant(wall(4, 10, 2, 15), 'Australia/Sydney'))).toBe(
      '2026-10-03T16:15:00.000Z',
    );
    expect(iso(wallTimeToInstant(wall(5, 4, 2, 30), 'Australia/Sydney'))).toBe(
      '2026-04-04T15:30:00.000Z',
    );
  });

  it('round-trips every instant whose wall time is unambiguous', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('America/New_York', 'Europe/Berlin', 'Australia/Sydney', 'Asia/Kolkata'),
        fc.integer({ min: Date.parse('1990-01-01T00:00Z'), max: Date.parse('2060-01-01T00:00Z') }),
        (tz, instant) => {
          const whole = Math.floor(instant / 1000) * 1000;
          const back = wallTimeToInstant(wallTimeAt(whole, tz), tz);
          // A repeated wall time maps to its first instance, one offset change earlier.
          if (back !== whole)
            expect(whole - back).toBe(zoneOffsetMs(back, tz) - zoneOffsetMs(whole, tz));
          else expect(back).toBe(whole);
        },
      ),
      { numRuns: 2000 },
    );
  });
});
