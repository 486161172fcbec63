import type { PriceValues } from '../catalogue/price.js';

/** The token counts of one model call, split by how each is billed. */
export interface TokenCounts {
  /** Uncached input tokens: the prompt minus cache reads and cache writes. */
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

/**
 * The cost in USD of one model call: input at the input price, cache reads at the cache-read
 * price, cache writes at the cache-write price (either absent: the input price), output at the
 * output price. One formula, whether the call was streamed or not. Rounded to 1e-10 USD so sums
 * of costs do not carry binary-fraction noise (0.1 + 0.2).
 */
export const computeCostUsd = (price: PriceValues, tokens: TokenCounts): number => {
  const micro =
    tokens.inputTokens * price.inputUsdPerMtok +
    tokens.cacheReadTokens * (price.cacheReadUsdPerMtok ?? price.inputUsdPerMtok) +
    tokens.cacheWriteTokens * (price.cacheWriteUsdPerMtok ?? price.inputUsdPerMtok) +
    tokens.outputTokens * price.outputUsdPerMtok;
  return Number((micro / 1_000_000).toFixed(10));
};
