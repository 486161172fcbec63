import { describe, expect, it } from 'vitest';
import { exceedsJsonDepth } from './json-depth.js';

const nested = (depth: number): unknown => {
  let value: unknown = 'leaf';
  for (let i = 0; i < depth; i++) value = i % 2 ? { a: value } : [value];
  return value;
};

describe('exceedsJsonDepth', () => {
  it('counts objects and arrays, the value itself as depth 1', () => {
    expect(exceedsJsonDepth('x', 0)).toBe(false);
    expect(exceedsJsonDepth({}, 1)).toBe(false);
    expect(exceedsJsonDepth(nested(32), 32)).toBe(false);
    expect(exceedsJsonDepth(nested(33), 32)).toBe(true);
  });

  it('judges a value far deeper than the stack allows without overflowing', () => {
    expect(exceedsJsonDepth(nested(200_000), 32)).toBe(true);
  });
});
