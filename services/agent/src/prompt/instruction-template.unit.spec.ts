import { describe, expect, it } from 'vitest';
import { fillTemplate, isKnownTimeZone, isoInZone, unknownTemplateVariable } from './instruction-template.js';

const values = {
  metadata: { siteName: 'Acme', 'page-id': 'p-1' },
  user: { id: 'ana', role: 'owner' },
  now: '2026-07-01T10:15:30.123Z',
};

describe('instruction templates', () => {
  it('fills metadata keys, the end user and now (UTC by default)', () => {
    const template =
      'Site {{metadata.siteName}} ({{ metadata.page-id }}); user {{user.id}} as {{user.role}} at {{now}}.';
    expect(fillTemplate(template, values)).toBe(
      'Site Acme (p-1); user ana as owner at 2026-07-01T10:15:30Z.',
    );
  });

  it('fills a missing metadata key, a missing role and a turn without a user as empty', () => {
    expect(fillTemplate('[{{metadata.absent}}][{{user.role}}]', { ...values, user: { id: 'ana' } })).toBe(
      '[][]',
    );
    expect(fillTemplate('[{{user.id}}]', { ...values, user: undefined, metadata: undefined })).toBe('[]');
    expect(fillTemplate('{{metadata.toString}}', values)).toBe('');
  });

  it('shows now in the agent time zone, with its offset', () => {
    expect(fillTemplate('{{now}}', { ...values, timeZone: 'Europe/Paris' })).toBe(
      '2026-07-01T12:15:30+02:00',
    );
    expect(isoInZone('2026-01-15T23:30:00Z', 'America/New_York')).toBe('2026-01-15T18:30:00-05:00');
    expect(isoInZone('2026-01-15T23:30:00Z', 'Asia/Kolkata')).toBe('2026-01-16T05:00:00+05:30');
  });

  it('names the first unknown variable; text without variables and the four kinds pass', () => {
    expect(unknownTemplateVariable('Plain { text } with {single} braces')).toBeUndefined();
    expect(unknownTemplateVariable('{{metadata.a}} {{ user.id }} {{user.role}} {{now}}')).toBeUndefined();
    expect(unknownTemplateVariable('Hi {{user.name}} and {{now}}')).toBe('{{user.name}}');
    expect(unknownTemplateVariable('{{metadata.}}')).toBe('{{metadata.}}');
    expect(unknownTemplateVariable('{{args.id}}')).toBe('{{args.id}}');
  });

  it('knows IANA zones and refuses others', () => {
    expect(isKnownTimeZone('Europe/Paris')).toBe(true);
    expect(isKnownTimeZone('Mars/Olympus')).toBe(false);
  });
});
