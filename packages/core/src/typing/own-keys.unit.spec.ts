import { describe, expect, it } from 'vitest';
import { hasOwnKey, ownValue, withOwn } from './own-keys.js';

const PROTOTYPE_NAMES = [
  'toString',
  'constructor',
  'valueOf',
  'hasOwnProperty',
  '__proto__',
  'isPrototypeOf',
];

describe('own-property lookups of user-chosen ids', () => {
  it('finds nothing for prototype names in a record that does not hold them', () => {
    const record: Record<string, number> = { a: 1 };
    for (const name of PROTOTYPE_NAMES) {
      expect(ownValue(record, name)).toBeUndefined();
      expect(hasOwnKey(record, name)).toBe(false);
    }
    expect(ownValue(record, 'a')).toBe(1);
  });

  it('stores a prototype name as an ordinary key, without touching any prototype', () => {
    let record: Record<string, { n: number }> = {};
    for (const name of PROTOTYPE_NAMES) record = withOwn(record, name, { n: name.length });
    expect(Object.getPrototypeOf(record)).toBe(Object.prototype);
    expect(Object.keys(record).sort()).toEqual([...PROTOTYPE_NAMES].sort());
    expect(ownValue(record, '__proto__')).toEqual({ n: 9 });
    // It survives JSON (snapshots, events) as an own key too.
    const copy = JSON.parse(JSON.stringify(record)) as Record<string, { n: number }>;
    expect(ownValue(copy, '__proto__')).toEqual({ n: 9 });
    expect(({} as { n?: number }).n).toBeUndefined();
  });
});
