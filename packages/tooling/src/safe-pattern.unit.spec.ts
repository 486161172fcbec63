import { describe, expect, it } from 'vitest';
import { ArgsValidator } from './args-validator.js';
import { unsafePatternReason } from './safe-pattern.js';

describe('schema patterns that could stall every tenant', () => {
  it('refuses nested or alternated repetition and backreferences', () => {
    for (const pattern of [
      '^(a+)+$',
      '(a*)*',
      '(a|aa)+',
      '(?:x*y)*z',
      '^(\\w+\\s?)*$',
      '(a{1,5}){2,}',
      '(.)\\1',
      '(?<n>a)\\k<n>',
      'x'.repeat(513),
      '((a)+b)+',
    ]) {
      expect(unsafePatternReason(pattern), pattern).toBeDefined();
    }
  });

  it('accepts the patterns tool schemas use', () => {
    for (const pattern of [
      '^[a-z0-9_-]{1,64}$',
      '^\\d{4}-\\d{2}-\\d{2}$',
      '^(\\+|-)?\\d+$',
      '^[A-Z]{2}(-[A-Z]{2})?$',
      '[(+*)]+',
      '^(ab){3}$',
      '\\(+\\)',
      '^https?://',
    ]) {
      expect(unsafePatternReason(pattern), pattern).toBeUndefined();
    }
  });

  it('a tool schema with such a pattern does not register, and checking arguments never hangs', () => {
    const validator = new ArgsValidator();
    const evil = { type: 'object', properties: { a: { type: 'string', pattern: '^(a+)+$' } } };
    expect(() => validator.assertToolSchema(evil)).toThrow(/inputSchema .*exponential/);
    const evilKeys = { type: 'object', patternProperties: { '^(a|a)*$': { type: 'string' } } };
    expect(() => validator.assertToolSchema(evilKeys)).toThrow(/inputSchema/);
    const fine = { type: 'object', properties: { a: { type: 'string', pattern: '^[a]+$' } } };
    const started = performance.now();
    expect(validator.validate(fine, { a: `${'a'.repeat(50_000)}!` }).ok).toBe(false);
    expect(performance.now() - started).toBeLessThan(500);
  });
});
