import type { BuiltinTool } from './builtin-tool.js';
import { BuiltinToolError } from './builtin-tool.js';

/** What `current_time` answers. */
export interface CurrentTime {
  /**
   * The zone used: the requested name, spelled as ICU spells it when only the case differs. An
   * alias stays as asked (`Asia/Kolkata`; Node's ICU would say `Asia/Calcutta`).
   */
  timezone: string;
  /** The instant in UTC, ISO 8601 (`2025-03-10T12:00:00.000Z`). */
  iso: string;
  /** Wall-clock time in the zone: `YYYY-MM-DD HH:mm:ss`. */
  local: string;
  /** The zone's UTC offset at that instant: `+05:30`, `-08:00`, `+00:00`. */
  offset: string;
  /** English weekday name in the zone: `Monday`. */
  weekday: string;
}

const MAX_ZONE_LENGTH = 64;

/** `current_time`: the model has no clock; this is it. */
export const currentTimeTool: BuiltinTool = {
  name: 'current_time',
  description:
    'Returns the current date and time in a time zone: the UTC instant (iso), the local wall-clock ' +
    'time (local, "YYYY-MM-DD HH:mm:ss"), the UTC offset and the weekday. timezone is an IANA name ' +
    'such as "Europe/Paris" or "America/New_York"; the default is UTC.',
  inputSchema: {
    type: 'object',
    properties: {
      timezone: {
        type: 'string',
        minLength: 1,
        maxLength: MAX_ZONE_LENGTH,
        description: 'IANA time zone name, e.g. "Asia/Kolkata". Default: "UTC".',
      },
    },
    additionalProperties: false,
  },
  execute(args, ctx): CurrentTime {
    return currentTime(ctx.now(), args['timezone'] ?? 'UTC');
  },
};

/** The wall-clock reading of `instant` in `zone`; BuiltinToolError `unknown_timezone` for a zone Intl does not know. */
export const currentTime = (instant: Date, zone: unknown): CurrentTime => {
  const formatter = formatterFor(zone);
  const parts: Record<string, string> = {};
  for (const part of formatter.formatToParts(instant)) parts[part.type] = part.value;
  const [year, month, day, hour, minute, second] = ['year', 'month', 'day', 'hour', 'minute', 'second'].map(
    (type) => Number(parts[type]),
  ) as [number, number, number, number, number, number];
  const wallClockAsUtc = Date.UTC(year, month - 1, day, hour, minute, second);
  const instantToSecond = Math.floor(instant.getTime() / 1000) * 1000;
  const offsetMinutes = Math.round((wallClockAsUtc - instantToSecond) / 60_000);
  const resolved = formatter.resolvedOptions().timeZone;
  return {
    timezone: resolved.toLowerCase() === String(zone).trim().toLowerCase() ? resolved : String(zone).trim(),
    iso: instant.toISOString(),
    local: `${String(year).padStart(4, '0')}-${pad(month)}-${pad(day)} ${pad(hour)}:${pad(minute)}:${pad(second)}`,
    offset: formatOffset(offsetMinutes),
    weekday: parts['weekday'] ?? '',
  };
};

const formatterFor = (zone: unknown): Intl.DateTimeFormat => {
  if (typeof zone !== 'string' || zone.trim() === '' || zone.length > MAX_ZONE_LENGTH) {
    throw new BuiltinToolError(
      'unknown_timezone',
      'timezone must be an IANA time zone name such as "Europe/Paris"',
      {
        field: 'timezone',
      },
    );
  }
  try {
    return new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      weekday: 'long',
    });
  } catch {
    const hint = suggestZones(zone);
    throw new BuiltinToolError(
      'unknown_timezone',
      `unknown time zone ${JSON.stringify(zone)}; use an IANA name such as "Europe/Paris", "America/New_York" or "UTC"` +
        (hint.length > 0 ? ` (did you mean ${hint.map((z) => JSON.stringify(z)).join(' or ')}?)` : ''),
      { field: 'timezone' },
    );
  }
};

/** Zones whose city part matches what the model wrote (`Paris` → `Europe/Paris`). */
const suggestZones = (zone: string): string[] => {
  const city = zone.trim().replace(/\s+/g, '_').toLowerCase();
  return Intl.supportedValuesOf('timeZone')
    .filter((name) => name.toLowerCase().endsWith(`/${city}`))
    .slice(0, 3);
};

const pad = (n: number): string => String(n).padStart(2, '0');

const formatOffset = (minutes: number): string => {
  const sign = minutes < 0 ? '-' : '+';
  const abs = Math.abs(minutes);
  return `${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
};
