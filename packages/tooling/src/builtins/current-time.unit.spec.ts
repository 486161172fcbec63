import { ValidationError } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { BuiltinToolError } from './builtin-tool.js';
import { currentTime, currentTimeTool } from './current-time.js';

const at = (iso: string) => ({
  tenantId: 't',
  conversationId: 'c',
  toolCallId: 'k',
  now: () => new Date(iso),
});

describe('current_time', () => {
  it('defaults to UTC', () => {
    expect(currentTimeTool.execute({}, at('2025-03-10T12:34:56.789Z'))).toEqual({
      timezone: 'UTC',
      iso: '2025-03-10T12:34:56.789Z',
      local: '2025-03-10 12:34:56',
      offset: '+00:00',
      weekday: 'Monday',
    });
  });

  it('reads the wall clock of a half-hour zone', () => {
    expect(currentTimeTool.execute({ timezone: 'Asia/Kolkata' }, at('2025-03-10T20:00:00Z'))).toEqual({
      timezone: 'Asia/Kolkata',
      iso: '2025-03-10T20:00:00.000Z',
      local: '2025-03-11 01:30:00',
      offset: '+05:30',
      weekday: 'Tuesday',
    });
  });

  it('follows daylight saving time, with negative offsets', () => {
    expect(currentTime(new Date('2025-01-15T17:00:00Z'), 'America/New_York')).toMatchObject({
      local: '2025-01-15 12:00:00',
      offset: '-05:00',
      weekday: 'Wednesday',
    });
    expect(currentTime(new Date('2025-07-15T16:00:00Z'), 'America/New_York')).toMatchObject({
      local: '2025-07-15 12:00:00',
      offset: '-04:00',
    });
    // The spring-forward instant in Paris: 01:59:59 UTC+1 is followed by 03:00:00 UTC+2.
    expect(currentTime(new Date('2025-03-30T00:59:59Z'), 'Europe/Paris')).toMatchObject({
      local: '2025-03-30 01:59:59',
      offset: '+01:00',
    });
    expect(currentTime(new Date('2025-03-30T01:00:00Z'), 'Europe/Paris')).toMatchObject({
      local: '2025-03-30 03:00:00',
      offset: '+02:00',
    });
  });

  it('handles 45-minute offsets, the far side of the date line and midnight as 00', () => {
    expect(currentTime(new Date('2025-06-01T00:00:00Z'), 'Asia/Kathmandu').offset).toBe('+05:45');
    expect(currentTime(new Date('2025-06-01T12:00:00Z'), 'Pacific/Kiritimati')).toMatchObject({
      local: '2025-06-02 02:00:00',
      offset: '+14:00',
    });
    expect(currentTime(new Date('2025-06-01T00:00:00Z'), 'UTC').local).toBe('2025-06-01 00:00:00');
  });

  it('answers the name of the zone it used, in its proper case, aliases as asked', () => {
    expect(currentTime(new Date(0), 'utc').timezone).toBe('UTC');
    expect(currentTime(new Date(0), 'europe/paris').timezone).toBe('Europe/Paris');
    expect(currentTime(new Date(0), 'Asia/Kolkata').timezone).toBe('Asia/Kolkata');
    expect(currentTime(new Date(0), 'Asia/Calcutta').timezone).toBe('Asia/Calcutta');
  });

  it.each([['Mars/Olympus'], ['Paris'], ['not a zone'], [''], ['x'.repeat(65)], [42], [null]])(
    'refuses the zone %j with unknown_timezone',
    (zone) => {
      const run = () => currentTime(new Date(0), zone);
      expect(run).toThrow(BuiltinToolError);
      expect(run).toThrow(ValidationError);
      try {
        run();
      } catch (error) {
        expect((error as BuiltinToolError).reason).toBe('unknown_timezone');
        expect((error as BuiltinToolError).message).toMatch(/IANA/);
      }
    },
  );

  it('suggests the zone a city name belongs to', () => {
    expect(() => currentTime(new Date(0), 'Paris')).toThrow(
      'unknown time zone "Paris"; use an IANA name such as "Europe/Paris", "America/New_York" or "UTC" (did you mean "Europe/Paris"?)',
    );
    expect(() => currentTime(new Date(0), 'new york')).toThrow(/did you mean "America\/New_York"/);
  });

  it('is described with an object schema', () => {
    expect(currentTimeTool.inputSchema).toMatchObject({ type: 'object', additionalProperties: false });
  });
});
