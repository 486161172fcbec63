import type { ModelPrice, PriceValues } from '../catalogue/price.js';
import type { PriceSet } from './price-events.js';

/** One override as the timeline holds it. */
interface Period {
  fromMs: number;
  /** Stream version: of two overrides from the same instant, the later one wins. */
  version: number;
  price: ModelPrice;
}

/**
 * The operators' price overrides per model key, in effective order: which override is in force
 * at an instant. Pure: fed with the stream's events in version order.
 */
export class PriceTimeline {
  private readonly byKey = new Map<string, Period[]>();

  /** Adds one PriceSet event (its stream version breaks ties between equal instants). */
  apply(event: PriceSet, version: number): void {
    const { key, model, effectiveFrom, reason } = event.data;
    const values: PriceValues = {
      inputUsdPerMtok: event.data.inputUsdPerMtok,
      outputUsdPerMtok: event.data.outputUsdPerMtok,
      ...(event.data.cacheReadUsdPerMtok !== undefined
        ? { cacheReadUsdPerMtok: event.data.cacheReadUsdPerMtok }
        : {}),
      ...(event.data.cacheWriteUsdPerMtok !== undefined
        ? { cacheWriteUsdPerMtok: event.data.cacheWriteUsdPerMtok }
        : {}),
      contextWindowTokens: event.data.contextWindowTokens,
    };
    const period: Period = {
      fromMs: Date.parse(effectiveFrom),
      version,
      price: { model, ...values, effectiveFrom, source: reason ? `override: ${reason}` : 'override' },
    };
    const periods = this.byKey.get(key) ?? [];
    periods.push(period);
    periods.sort((a, b) => a.fromMs - b.fromMs || a.version - b.version);
    this.byKey.set(key, periods);
  }

  /** The override in force for `key` at `atMs`, if any. */
  priceAt(key: string, atMs: number): ModelPrice | undefined {
    const periods = this.byKey.get(key);
    if (!periods) return undefined;
    let found: Period | undefined;
    for (const period of periods) {
      if (period.fromMs > atMs) break;
      found = period;
    }
    return found?.price;
  }

  /** Every key with at least one override. */
  keys(): string[] {
    return [...this.byKey.keys()];
  }

  /** Every override of `key`, oldest first (the price history). */
  history(key: string): ModelPrice[] {
    return (this.byKey.get(key) ?? []).map((period) => period.price);
  }
}
