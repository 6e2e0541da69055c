import { describe, expect, it } from 'vitest';
import { dateIn, isValidTimeZone } from './time-zone.js';

describe('time zones', () => {
  it('tells IANA zones from other names', () => {
    expect(isValidTimeZone('Europe/Paris')).toBe(true);
    expect(isValidTimeZone('UTC')).toBe(true);
    expect(isValidTimeZone('Mars/Olympus_Mons')).toBe(false);
    expect(isValidTimeZone('')).toBe(false);
  });

  it('gives the calendar date an instant has in a zone', () => {
    const instant = Date.UTC(2026, 2, 31, 23, 30); // 31 March 23:30 UTC
    expect(dateIn(instant, 'UTC')).toBe('2026-03-31');
    expect(dateIn(instant, 'Europe/Paris')).toBe('2026-04-01');
    expect(dateIn(instant, 'America/New_York')).toBe('2026-03-31');
  });

  it('refuses an unknown zone by name', () => {
    expect(() => dateIn(0, 'Mars/Olympus_Mons')).toThrow('unknown time zone: Mars/Olympus_Mons');
  });
});
