import { describe, expect, it } from 'vitest';
import { dayStart, isKnownTimeZone, localDateOf } from './time-zones.js';

const iso = (ms: number): string => new Date(ms).toISOString();

describe('day boundaries in a time zone', () => {
  it('cuts days at local midnight for whole, half and quarter-hour offsets', () => {
    expect(iso(dayStart('2026-03-01', 'UTC'))).toBe('2026-03-01T00:00:00.000Z');
    expect(iso(dayStart('2026-03-01', 'Asia/Kolkata'))).toBe('2026-02-28T18:30:00.000Z');
    expect(iso(dayStart('2026-03-01', 'Asia/Kathmandu'))).toBe('2026-02-28T18:15:00.000Z');
    expect(iso(dayStart('2026-03-01', 'America/Los_Angeles'))).toBe('2026-03-01T08:00:00.000Z');
    expect(iso(dayStart('2026-03-01', 'Pacific/Kiritimati'))).toBe('2026-02-28T10:00:00.000Z');
  });

  it('gives DST days 23 and 25 hours (Los Angeles, 2026-03-08 and 2026-11-01)', () => {
    const hours = (date: string, next: string): number =>
      (dayStart(next, 'America/Los_Angeles') - dayStart(date, 'America/Los_Angeles')) / 3_600_000;
    expect(hours('2026-03-08', '2026-03-09')).toBe(23);
    expect(hours('2026-11-01', '2026-11-02')).toBe(25);
    expect(iso(dayStart('2026-03-09', 'America/Los_Angeles'))).toBe('2026-03-09T07:00:00.000Z');
  });

  it('finds the first instant of a day whose midnight does not exist (Havana springs forward at 00:00)', () => {
    const start = dayStart('2026-03-08', 'America/Havana');
    expect(localDateOf(start, 'America/Havana')).toBe('2026-03-08');
    expect(localDateOf(start - 1, 'America/Havana')).toBe('2026-03-07');
  });

  it('knows real zones and refuses made-up ones', () => {
    expect(isKnownTimeZone('Asia/Kathmandu')).toBe(true);
    expect(isKnownTimeZone('Mars/Olympus_Mons')).toBe(false);
    expect(isKnownTimeZone('')).toBe(false);
  });
});
