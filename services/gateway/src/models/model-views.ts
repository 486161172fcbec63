// `GET /v1/models` and `PUT /v1/defaults` as API.md shows them ("Models, defaults and agent options").
import type { Defaults } from '@keel/proto/keel/models/v1/models';
import type { ModelPrice } from '@keel/proto/keel/pricing/v1/pricing';
import {
  fail,
  objectWith,
  optionalIntegerIn,
  optionalNumberIn,
  optionalString,
} from '../config/request-fields.js';

/** One row of `GET /v1/models`. */
export interface ModelView {
  id: string;
  /** Tokens; null when the catalogue does not know it. */
  contextWindow: number | null;
  inputPerMTok: number;
  outputPerMTok: number;
  /** Absent from the price: the input price (what a cache read is billed at then). */
  cacheReadPerMTok: number;
  configured: boolean;
}

/**
 * The catalogue (prices in effect now, the operator's overrides applied by the pricing service),
 * each model `configured` when the tenant can call its provider now.
 */
export const modelViews = (
  prices: readonly ModelPrice[],
  configuredProviders: readonly string[],
): ModelView[] => {
  const callable = new Set(configuredProviders);
  return prices.map((price) => ({
    id: price.model,
    contextWindow: price.contextWindowTokens > 0 ? price.contextWindowTokens : null,
    inputPerMTok: price.inputUsdPerMtok,
    outputPerMTok: price.outputUsdPerMtok,
    cacheReadPerMTok: price.cacheReadUsdPerMtok ?? price.inputUsdPerMtok,
    configured: callable.has(price.model.slice(0, price.model.indexOf(':'))),
  }));
};

/** The tenant's defaults as `PUT /v1/defaults` answers them (fields never set left out). */
export interface DefaultsView {
  model?: string;
  temperature?: number;
  maxSteps?: number;
}

/** The defaults message as JSON. */
export const defaultsView = (defaults: Defaults | undefined): DefaultsView => ({
  ...(defaults?.model !== undefined ? { model: defaults.model } : {}),
  ...(defaults?.temperature !== undefined ? { temperature: defaults.temperature } : {}),
  ...(defaults?.maxSteps !== undefined ? { maxSteps: defaults.maxSteps } : {}),
});

/** Checks `PUT /v1/defaults` `{ model?, temperature?, maxSteps? }`; the agent checks the model's provider. */
export const parsePutDefaults = (body: unknown): Defaults => {
  const object = objectWith(body, ['model', 'temperature', 'maxSteps']);
  const model = optionalString(object.model, 'model', 200);
  if (model !== undefined && !/^[a-z]+:.+/.test(model)) fail('model', 'model must be "provider:model"');
  const temperature = optionalNumberIn(object.temperature, 'temperature', 0, 2);
  const maxSteps = optionalIntegerIn(object.maxSteps, 'maxSteps', 1, 100);
  return {
    ...(model !== undefined ? { model } : {}),
    ...(temperature !== undefined ? { temperature } : {}),
    ...(maxSteps !== undefined ? { maxSteps } : {}),
  };
};
