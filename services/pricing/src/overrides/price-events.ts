import type { PriceValues } from '../catalogue/price.js';

/** The platform's own tenant (the gateway's PLATFORM_TENANT_ID): platform-wide streams live under it. */
export const PRICING_TENANT_ID = 'keel';

/** The one stream of operators' price overrides: `pricing-catalogue`. */
export const PRICE_OVERRIDE_STREAM = 'pricing-catalogue';

/**
 * An operator set a model's price from an instant on. Appended, never changed: the stream is the
 * history of prices, and a cost is computed with the price in force at its usage instant.
 */
export interface PriceSet {
  type: 'PriceSet';
  data: PriceValues & {
    /** The normalised catalogue key, e.g. `anthropic:claude-3-5-sonnet`. */
    key: string;
    /** The model as shown (the catalogue's name when the key is a catalogue model's). */
    model: string;
    /** RFC 3339 UTC instant from which the price applies; never before `setAt`. */
    effectiveFrom: string;
    /** When the operator set it. */
    setAt: string;
    /** The operator's note, if any. */
    reason?: string;
  };
}

/** Every event of the price override stream. */
export type PriceOverrideEvent = PriceSet;
