import { ValidationError } from '@keel/core';
import { modelKeyCandidates, normaliseModelId } from './model-id.js';
import type { ModelPrice, PriceValues } from './price.js';
import { MAX_CONTEXT_WINDOW_TOKENS, MAX_USD_PER_MTOK } from './price.js';

/** One entry of the catalogue file (services/pricing/catalogue/models.json). */
export interface CatalogueEntry extends PriceValues {
  /** `provider:model`, or `provider:*` for every model of a provider (local models). */
  model: string;
  /** Other names of the same model (normalised like any id; the provider is the entry's). */
  aliases?: string[];
  /** Where the price was read. */
  source: string;
  /** The date (YYYY-MM-DD) the price was taken as current. */
  asOf: string;
  note?: string;
}

/** The shipped catalogue: a version and its entries. */
export interface CatalogueFile {
  version: string;
  models: CatalogueEntry[];
}

/**
 * The shipped price catalogue, indexed by normalised key (entries and their aliases). Its prices
 * apply since always; operators' overrides (price-timeline.ts) take over from their instant.
 */
export class Catalogue {
  private readonly byKey = new Map<string, ModelPrice>();

  private constructor(
    readonly version: string,
    readonly entries: readonly CatalogueEntry[],
  ) {
    for (const entry of entries) {
      const key = normaliseModelId(entry.model)?.key;
      const provider = key?.slice(0, key.indexOf(':'));
      if (key === undefined || provider === undefined) {
        throw new ValidationError(`catalogue model ${entry.model} names no known provider`, {
          field: 'model',
        });
      }
      const price: ModelPrice = {
        model: entry.model,
        inputUsdPerMtok: entry.inputUsdPerMtok,
        outputUsdPerMtok: entry.outputUsdPerMtok,
        ...(entry.cacheReadUsdPerMtok !== undefined
          ? { cacheReadUsdPerMtok: entry.cacheReadUsdPerMtok }
          : {}),
        ...(entry.cacheWriteUsdPerMtok !== undefined
          ? { cacheWriteUsdPerMtok: entry.cacheWriteUsdPerMtok }
          : {}),
        contextWindowTokens: entry.contextWindowTokens,
        source: `catalogue ${version}`,
      };
      const names = [
        key,
        ...(entry.aliases ?? []).map((alias) => normaliseModelId(`${provider}:${alias}`)?.key),
      ];
      for (const name of names) {
        if (name === undefined) throw new ValidationError(`catalogue alias of ${entry.model} is invalid`);
        if (this.byKey.has(name)) {
          throw new ValidationError(`catalogue names ${name} twice`, { field: 'model' });
        }
        this.byKey.set(name, price);
      }
    }
  }

  /** Checks a parsed catalogue file and indexes it; a malformed file fails the service at start. */
  static parse(document: unknown): Catalogue {
    const doc = document as Partial<CatalogueFile> | null;
    if (typeof doc?.version !== 'string' || doc.version === '') {
      throw new ValidationError('catalogue version must be a non-empty string', { field: 'version' });
    }
    if (!Array.isArray(doc.models)) {
      throw new ValidationError('catalogue models must be an array', { field: 'models' });
    }
    return new Catalogue(
      doc.version,
      doc.models.map((entry, i) => checkEntry(entry, `models[${i}]`)),
    );
  }

  /** The catalogue price of exactly this normalised key (an entry or an alias). */
  priceOfKey(key: string): ModelPrice | undefined {
    return this.byKey.get(key);
  }

  /** The catalogue price of a model id, by the most specific key it has (see `modelKeyCandidates`). */
  lookup(modelId: string): ModelPrice | undefined {
    for (const key of modelKeyCandidates(modelId)) {
      const price = this.byKey.get(key);
      if (price) return price;
    }
    return undefined;
  }

  /** Every entry's price (aliases not repeated), sorted by model. */
  prices(): ModelPrice[] {
    return [...new Set(this.byKey.values())].sort((a, b) => a.model.localeCompare(b.model));
  }
}

const checkEntry = (raw: unknown, at: string): CatalogueEntry => {
  const entry = raw as Partial<CatalogueEntry> | null;
  const fail = (field: string, what: string): never => {
    throw new ValidationError(`${at}.${field} ${what}`, { field: `${at}.${field}` });
  };
  if (typeof entry?.model !== 'string' || entry.model === '') return fail('model', 'must be a string');
  const price = (field: keyof PriceValues, optional: boolean): void => {
    const value = entry[field];
    if (value === undefined && optional) return;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > MAX_USD_PER_MTOK) {
      fail(field, `must be a number from 0 to ${MAX_USD_PER_MTOK}`);
    }
  };
  price('inputUsdPerMtok', false);
  price('outputUsdPerMtok', false);
  price('cacheReadUsdPerMtok', true);
  price('cacheWriteUsdPerMtok', true);
  const window = entry.contextWindowTokens;
  if (
    !Number.isSafeInteger(window) ||
    (window as number) < 0 ||
    (window as number) > MAX_CONTEXT_WINDOW_TOKENS
  ) {
    fail('contextWindowTokens', 'must be a whole number of tokens, 0 when unknown');
  }
  if (typeof entry.source !== 'string' || entry.source === '') fail('source', 'must be a string');
  if (typeof entry.asOf !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(entry.asOf))
    fail('asOf', 'must be YYYY-MM-DD');
  if (
    entry.aliases !== undefined &&
    !(Array.isArray(entry.aliases) && entry.aliases.every((a) => typeof a === 'string'))
  ) {
    fail('aliases', 'must be an array of strings');
  }
  return entry as CatalogueEntry;
};
