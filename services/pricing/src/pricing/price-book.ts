import type { Catalogue } from '../catalogue/catalogue.js';
import { modelKeyCandidates, normaliseModelId } from '../catalogue/model-id.js';
import type { ModelPrice } from '../catalogue/price.js';
import type { PriceTimeline } from '../overrides/price-timeline.js';

/** The outcome of looking a model's price up at an instant: a price, or why there is none. */
export type PriceResolution = { price: ModelPrice; key: string } | { price?: undefined; reason: string };

/**
 * The shipped catalogue with the operators' overrides on top: the price of a model at an instant.
 * A model is looked up by its most specific key first (a dated snapshot before its family, see
 * `modelKeyCandidates`); for each key, an override in force at the instant wins over the catalogue.
 */
export class PriceBook {
  constructor(
    private readonly catalogue: Catalogue,
    private readonly overrides: PriceTimeline,
  ) {}

  /** The key an override of `modelId` is stored under: a catalogue alias becomes its entry's key. */
  overrideKeyOf(modelId: string): { key: string; model: string } | undefined {
    const id = normaliseModelId(modelId);
    if (!id) return undefined;
    const entry = this.catalogue.priceOfKey(id.key);
    const key = entry ? (normaliseModelId(entry.model)?.key ?? id.key) : id.key;
    return { key, model: entry?.model ?? id.key };
  }

  /** The price of `modelId` in force at `atMs`, or the reason there is none (never a made-up 0). */
  resolve(modelId: string, atMs: number): PriceResolution {
    const candidates = modelKeyCandidates(modelId);
    if (candidates.length === 0) {
      return {
        reason: `unknown model ${modelId}: no provider Keel prices (openai, anthropic, google, ollama, demo)`,
      };
    }
    for (const candidate of candidates) {
      const entry = this.catalogue.priceOfKey(candidate);
      const key = entry ? (normaliseModelId(entry.model)?.key ?? candidate) : candidate;
      const price = this.resolveKey(key, atMs);
      if (price) return { key, price };
    }
    return { reason: `unknown model ${modelId}: not in the price catalogue (looked up as ${candidates[0]})` };
  }

  /** Every model with a price in force at `atMs`, sorted by model. */
  list(atMs: number): ModelPrice[] {
    const keys = new Set<string>();
    for (const price of this.catalogue.prices()) {
      const key = normaliseModelId(price.model)?.key;
      if (key) keys.add(key);
    }
    for (const key of this.overrides.keys()) keys.add(key);
    const prices: ModelPrice[] = [];
    for (const key of keys) {
      const resolved = this.resolveKey(key, atMs);
      if (resolved) prices.push(resolved);
    }
    return prices.sort((a, b) => a.model.localeCompare(b.model));
  }

  private resolveKey(key: string, atMs: number): ModelPrice | undefined {
    const entry = this.catalogue.priceOfKey(key);
    const override = this.overrides.priceAt(key, atMs);
    // An override that does not say the window (0) keeps the catalogue's.
    if (override) {
      return {
        ...override,
        contextWindowTokens: override.contextWindowTokens || entry?.contextWindowTokens || 0,
      };
    }
    return entry;
  }
}
