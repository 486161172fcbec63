import type { Actor } from '@keel/core';
import { NotFoundError, ValidationError } from '@keel/core';
import type { Catalogue } from '../catalogue/catalogue.js';
import type { ModelPrice } from '../catalogue/price.js';
import type { TokenCounts } from '../cost/compute-cost.js';
import { computeCostUsd } from '../cost/compute-cost.js';
import type { PriceOverrideLog } from '../overrides/price-override-log.js';
import { PriceBook } from './price-book.js';
import { instantOf, modelIdOf, tokensOf, usdPerMtokOf, windowOf } from './request-fields.js';

/** A cost question: one model call's tokens and when it happened (RFC 3339; empty: now). */
export interface CostQuery extends Partial<TokenCounts> {
  model: string;
  at?: string;
}

/** A cost, or why there is none: never a silent 0. */
export type CostAnswer = { costUsd: number; price: ModelPrice } | { costUsd?: undefined; reason: string };

/** An operator's new price for a model. */
export interface SetPriceInput {
  model: string;
  inputUsdPerMtok: number;
  outputUsdPerMtok: number;
  cacheReadUsdPerMtok?: number;
  cacheWriteUsdPerMtok?: number;
  contextWindowTokens?: number;
  /** RFC 3339; empty: now. Never in the past. */
  effectiveFrom?: string;
  reason?: string;
}

/** How far in the past an `effectiveFrom` may be and still count as "now" (clock skew, request latency). */
export const EFFECTIVE_FROM_TOLERANCE_MS = 5_000;

/**
 * The pricing service's operations, free of gRPC: prices at an instant, costs, and operators'
 * overrides. Bad input is a ValidationError naming the field; nothing is written for it.
 */
export class PricingService {
  private readonly book: PriceBook;

  constructor(
    readonly catalogue: Catalogue,
    private readonly overrides: PriceOverrideLog,
    private readonly clock: () => number = Date.now,
  ) {
    this.book = new PriceBook(catalogue, overrides.timeline);
  }

  /** Listens to the override stream on the bus and folds its log (at start); returns how many overrides it holds. */
  async loadOverrides(): Promise<number> {
    this.overrides.listen();
    await this.overrides.catchUp();
    return this.overrides.version;
  }

  /** Stops listening to the override stream (shutdown). */
  close(): void {
    this.overrides.close();
  }

  /** The price of a model at `at` (empty: now). Unknown model: NotFoundError. */
  async getPrice(model: string, at?: string): Promise<ModelPrice> {
    const id = modelIdOf('model', model);
    const atMs = instantOf('at', at, this.clock());
    await this.overrides.freshFor(atMs);
    const resolved = this.book.resolve(id, atMs);
    if (!resolved.price) throw new NotFoundError(resolved.reason, { details: { field: 'model' } });
    return resolved.price;
  }

  /** Every model with a price now, sorted by model. */
  async listModels(): Promise<ModelPrice[]> {
    const now = this.clock();
    await this.overrides.freshFor(now);
    return this.book.list(now);
  }

  /** The cost of one model call at the price in force at its instant; an unknown model has a reason, not a cost. */
  async computeCost(query: CostQuery): Promise<CostAnswer> {
    const id = modelIdOf('model', query.model);
    const tokens: TokenCounts = {
      inputTokens: tokensOf('inputTokens', query.inputTokens),
      outputTokens: tokensOf('outputTokens', query.outputTokens),
      cacheReadTokens: tokensOf('cacheReadTokens', query.cacheReadTokens),
      cacheWriteTokens: tokensOf('cacheWriteTokens', query.cacheWriteTokens),
    };
    const atMs = instantOf('at', query.at, this.clock());
    await this.overrides.freshFor(atMs);
    const resolved = this.book.resolve(id, atMs);
    if (!resolved.price) return { reason: resolved.reason };
    return { costUsd: computeCostUsd(resolved.price, tokens), price: resolved.price };
  }

  /** Records an operator's price from `effectiveFrom` on; returns it as it now applies. */
  async setPrice(input: SetPriceInput, meta: { actor?: Actor; correlationId?: string }): Promise<ModelPrice> {
    const now = this.clock();
    const id = modelIdOf('model', input.model);
    const target = this.book.overrideKeyOf(id);
    if (!target) {
      throw new ValidationError(
        `model ${id} names no provider Keel prices (openai, anthropic, google, ollama, demo)`,
        {
          field: 'model',
        },
      );
    }
    const fromMs = instantOf('effectiveFrom', input.effectiveFrom, now);
    if (fromMs < now - EFFECTIVE_FROM_TOLERANCE_MS) {
      throw new ValidationError(
        'effectiveFrom must not be in the past: costs already computed keep their price',
        {
          field: 'effectiveFrom',
        },
      );
    }
    const reason = input.reason?.trim().slice(0, 500);
    const effectiveFrom = new Date(Math.max(fromMs, now)).toISOString();
    const data = {
      key: target.key,
      model: target.model,
      inputUsdPerMtok: usdPerMtokOf('inputUsdPerMtok', input.inputUsdPerMtok),
      outputUsdPerMtok: usdPerMtokOf('outputUsdPerMtok', input.outputUsdPerMtok),
      ...(input.cacheReadUsdPerMtok !== undefined
        ? { cacheReadUsdPerMtok: usdPerMtokOf('cacheReadUsdPerMtok', input.cacheReadUsdPerMtok) }
        : {}),
      ...(input.cacheWriteUsdPerMtok !== undefined
        ? { cacheWriteUsdPerMtok: usdPerMtokOf('cacheWriteUsdPerMtok', input.cacheWriteUsdPerMtok) }
        : {}),
      contextWindowTokens: windowOf('contextWindowTokens', input.contextWindowTokens),
      effectiveFrom,
      setAt: new Date(now).toISOString(),
      ...(reason ? { reason } : {}),
    };
    await this.overrides.append(
      { type: 'PriceSet', data },
      {
        ...(meta.actor ? { actor: meta.actor } : {}),
        ...(meta.correlationId ? { correlationId: meta.correlationId } : {}),
      },
    );
    const recorded = this.book.resolve(target.key, Date.parse(effectiveFrom));
    return recorded.price ?? { ...data, source: 'override' };
  }
}
