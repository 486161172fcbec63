/** One model call's usage to price, as the agent recorded it, and when it happened. */
export interface UsageToPrice {
  /** `provider:model` as the provider reported it (any spelling the pricing service normalises). */
  model: string;
  /** Every prompt token, cache reads and writes included (LangChain's `input_tokens`). */
  promptTokens: number;
  completionTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** RFC 3339 instant of the call: it selects the price in force then. */
  at: string;
}

/** A priced call: a cost, or null and why; and the model's context window when pricing knows it. */
export interface PricedUsage {
  costUsd: number | null;
  /** Why `costUsd` is null (an unknown model, pricing unreachable); absent when priced. */
  reason?: string;
  /** The model's context window in tokens; null when unknown. */
  windowTokens: number | null;
}

/** Prices the agent's model calls; never throws: a failure is an unpriced call with its reason. */
export interface UsagePricing {
  price(usage: UsageToPrice): Promise<PricedUsage>;
}

/**
 * The tokens billed at the input price: the prompt minus cache reads and cache writes (each
 * billed at its own price), never below 0. Streamed and non-streamed calls report the same way.
 */
export const uncachedInputTokens = (
  usage: Pick<UsageToPrice, 'promptTokens' | 'cacheReadTokens' | 'cacheWriteTokens'>,
) => Math.max(0, usage.promptTokens - usage.cacheReadTokens - usage.cacheWriteTokens);
