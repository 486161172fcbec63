// An agent's instructions as a template (API.md "Instructions as templates"): `{{metadata.<key>}}`,
// `{{user.id}}`, `{{user.role}}` and `{{now}}` are filled per turn. Pure: the turn's instant and
// the zone come in as values. Any other `{{…}}` is refused when the agent is stored, so a filled
// template never meets an unknown variable.
import type { EndUser } from '@keel/events';

/** What a turn fills an agent's instructions with. */
export interface TemplateValues {
  /** The conversation's metadata (a missing key fills as empty). */
  metadata: Readonly<Record<string, string>> | undefined;
  /** The turn's end user; absent (turns recorded before it): id and role fill as empty. */
  user: EndUser | undefined;
  /** The turn's start instant (ISO, UTC): the same for every step, so prompt caches still hit. */
  now: string;
  /** The agent's IANA time zone `now` is shown in; absent: UTC. */
  timeZone?: string;
}

/** Every `{{…}}` of a template, with what is inside (spaces allowed around the name). */
const VARIABLE = /\{\{([^{}]*)\}\}/g;
const METADATA_KEY = /^metadata\.([A-Za-z0-9_-]{1,64})$/;
const FIXED = ['user.id', 'user.role', 'now'] as const;

/** The first variable of `template` that is not one of the four kinds, or undefined when all are known. */
export const unknownTemplateVariable = (template: string): string | undefined => {
  for (const [, inner] of template.matchAll(VARIABLE)) {
    const name = (inner ?? '').trim();
    if (!METADATA_KEY.test(name) && !(FIXED as readonly string[]).includes(name)) return `{{${inner}}}`;
  }
  return undefined;
};

/** `template` with each known variable replaced by its value (an unknown one is left as written). */
export const fillTemplate = (template: string, values: TemplateValues): string =>
  template.replace(VARIABLE, (written, inner: string) => {
    const name = inner.trim();
    if (name === 'now') return isoInZone(values.now, values.timeZone ?? 'UTC');
    if (name === 'user.id') return values.user?.id ?? '';
    if (name === 'user.role') return values.user?.role ?? '';
    const key = METADATA_KEY.exec(name)?.[1];
    if (key === undefined) return written;
    return values.metadata && Object.hasOwn(values.metadata, key) ? (values.metadata[key] ?? '') : '';
  });

/** Whether `timeZone` is an IANA zone this runtime knows. */
export const isKnownTimeZone = (timeZone: string): boolean => {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
    return true;
  } catch {
    return false;
  }
};

const two = (n: number): string => String(n).padStart(2, '0');

/**
 * `iso` (an instant) as ISO 8601 local time in `timeZone` with its offset, to the second:
 * `2026-03-29T03:30:00+02:00`; UTC ends in `Z`.
 */
export const isoInZone = (iso: string, timeZone: string): string => {
  const date = new Date(iso);
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
      .formatToParts(date)
      .map((p) => [p.type, p.value]),
  );
  const local = `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}`;
  const wall = Date.UTC(
    Number(parts.year),
    Number(parts.month) - 1,
    Number(parts.day),
    Number(parts.hour),
    Number(parts.minute),
    Number(parts.second),
  );
  const offsetMinutes = Math.round((wall - Math.floor(date.getTime() / 1000) * 1000) / 60_000);
  if (offsetMinutes === 0) return `${local}Z`;
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  return `${local}${sign}${two(Math.floor(abs / 60))}:${two(abs % 60)}`;
};
