import { describe, expect, it } from 'vitest';
import type { PriceValues } from '../catalogue/price.js';
import { computeCostUsd } from './compute-cost.js';

const claude: PriceValues = {
  inputUsdPerMtok: 3,
  outputUsdPerMtok: 15,
  cacheReadUsdPerMtok: 0.3,
  cacheWriteUsdPerMtok: 3.75,
  contextWindowTokens: 200_000,
};
const noCachePrices: PriceValues = {
  inputUsdPerMtok: 2.5,
  outputUsdPerMtok: 10,
  contextWindowTokens: 128_000,
};

describe('computeCostUsd', () => {
  it.each([
    ['nothing', claude, [0, 0, 0, 0], 0],
    ['a million input tokens at the input price', claude, [1_000_000, 0, 0, 0], 3],
    ['a million output tokens at the output price', claude, [0, 1_000_000, 0, 0], 15],
    ['cache reads at the cache-read price', claude, [0, 0, 1_000_000, 0], 0.3],
    ['cache writes at the cache-write price', claude, [0, 0, 0, 1_000_000], 3.75],
    // 1000×3 + 500×15 + 4000×0.3 + 200×3.75 = 3000 + 7500 + 1200 + 750 = 12450 µ$ per Mtok → 0.01245
    ['all four kinds', claude, [1000, 500, 4000, 200], 0.01245],
    ['cache reads without a cache price at the input price', noCachePrices, [0, 0, 1_000_000, 0], 2.5],
    ['cache writes without a cache price at the input price', noCachePrices, [0, 0, 0, 1_000_000], 2.5],
    [
      'no floating-point noise (0.1 + 0.2)',
      { ...noCachePrices, inputUsdPerMtok: 0.1, outputUsdPerMtok: 0.2 },
      [1_000_000, 1_000_000, 0, 0],
      0.3,
    ],
  ] as const)(
    '%s',
    (_name, price, [inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens], expected) => {
      expect(computeCostUsd(price, { inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens })).toBe(
        expected,
      );
    },
  );

  it('is the sum of its parts: a call split in two costs what the whole costs', () => {
    const whole = computeCostUsd(claude, {
      inputTokens: 1234,
      outputTokens: 567,
      cacheReadTokens: 8910,
      cacheWriteTokens: 111,
    });
    const first = computeCostUsd(claude, {
      inputTokens: 1000,
      outputTokens: 500,
      cacheReadTokens: 8000,
      cacheWriteTokens: 100,
    });
    const second = computeCostUsd(claude, {
      inputTokens: 234,
      outputTokens: 67,
      cacheReadTokens: 910,
      cacheWriteTokens: 11,
    });
    expect(first + second).toBeCloseTo(whole, 10);
  });
});
