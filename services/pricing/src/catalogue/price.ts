/** What one model costs, in USD per million tokens, and how much context it takes. */
export interface PriceValues {
  inputUsdPerMtok: number;
  outputUsdPerMtok: number;
  /** Absent: cache reads are billed at the input price. */
  cacheReadUsdPerMtok?: number;
  /** Absent: cache writes are billed at the input price. */
  cacheWriteUsdPerMtok?: number;
  /** The context window in tokens; 0 when unknown. */
  contextWindowTokens: number;
}

/** A model's price as the service answers it: where it comes from and since when it applies. */
export interface ModelPrice extends PriceValues {
  /** The model as the catalogue names it, `provider:model` (e.g. `openai:gpt-4.1`). */
  model: string;
  /** Instant (RFC 3339, UTC) from which this price applies; absent: since always (the shipped catalogue). */
  effectiveFrom?: string;
  /** `catalogue` (shipped with the code, and which version) or `override` (set by an operator). */
  source: string;
}

/** The highest price per million tokens accepted anywhere: a typo guard, far above any list price. */
export const MAX_USD_PER_MTOK = 100_000;

/** The largest context window accepted (a typo guard). */
export const MAX_CONTEXT_WINDOW_TOKENS = 100_000_000;
