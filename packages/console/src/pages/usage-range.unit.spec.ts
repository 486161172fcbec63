import { describe, expect, it } from 'vitest';
import { addDays, monthStart, timeZones, todayIn } from './usage-range';

describe('calendar days in a time zone (the usage range)', () => {
  const at = new Date('2026-03-01T03:30:00Z');

  it('today differs by zone: the day before west of UTC, the same day east', () => {
    expect(todayIn('UTC', at)).toBe('2026-03-01');
    expect(todayIn('America/Los_Angeles', at)).toBe('2026-02-28');
    expect(todayIn('Asia/Tokyo', at)).toBe('2026-03-01');
  });

  it('adds days across months and years, and finds the month start', () => {
    expect(addDays('2026-03-01', -1)).toBe('2026-02-28');
    expect(addDays('2026-12-31', 1)).toBe('2027-01-01');
    expect(addDays('2026-01-15', -29)).toBe('2025-12-17');
    expect(monthStart('2026-02-28')).toBe('2026-02-01');
  });

  it('offers UTC first, each zone once', () => {
    const zones = timeZones();
    expect(zones[0]).toBe('UTC');
    expect(new Set(zones).size).toBe(zones.length);
  });
});
