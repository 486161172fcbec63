import { InMemoryEventStore, NotFoundError, ValidationError } from '@keel/core';
import { beforeEach, describe, expect, it } from 'vitest';
import { loadCatalogueFile } from '../catalogue/catalogue-file.js';
import { PriceOverrideLog } from '../overrides/price-override-log.js';
import { PricingService } from './pricing.service.js';

const T0 = Date.parse('2026-03-01T00:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();
const HOUR = 3_600_000;

describe('PricingService', () => {
  let store: InMemoryEventStore;
  let now: number;
  let pricing: PricingService;
  const clock = () => now;
  const instance = () => new PricingService(loadCatalogueFile(), new PriceOverrideLog(store, clock), clock);

  beforeEach(() => {
    store = new InMemoryEventStore();
    now = T0;
    pricing = instance();
  });

  it('computes a cost from the catalogue: input, cache reads, cache writes and output each at their price', async () => {
    const answer = await pricing.computeCost({
      model: 'anthropic:claude-3-5-sonnet-20241022',
      inputTokens: 1000,
      outputTokens: 500,
      cacheReadTokens: 4000,
      cacheWriteTokens: 200,
    });
    expect(answer).toMatchObject({ costUsd: 0.01245, price: { model: 'anthropic:claude-3-5-sonnet' } });
  });

  it('answers an unknown model with no cost and a reason, never 0', async () => {
    const answer = await pricing.computeCost({ model: 'openai:gpt-9', inputTokens: 10 });
    expect(answer.costUsd).toBeUndefined();
    expect(answer).toMatchObject({ reason: expect.stringContaining('unknown model openai:gpt-9') });
    await expect(pricing.getPrice('openai:gpt-9')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('prices local models at zero, with a cost of 0 (known, not unknown)', async () => {
    expect(
      await pricing.computeCost({ model: 'ollama:llama3.1:8b', inputTokens: 5000, outputTokens: 100 }),
    ).toMatchObject({
      costUsd: 0,
    });
  });

  it.each([
    [{ model: '' }, 'model'],
    [{ model: 'gpt-4o', inputTokens: -1 }, 'inputTokens'],
    [{ model: 'gpt-4o', outputTokens: 1.5 }, 'outputTokens'],
    [{ model: 'gpt-4o', cacheReadTokens: -5 }, 'cacheReadTokens'],
    [{ model: 'gpt-4o', cacheWriteTokens: Number.NaN }, 'cacheWriteTokens'],
    [{ model: 'gpt-4o', at: 'yesterday' }, 'at'],
    [{ model: 'gpt-4o', at: '2026-03-01T00:00:00' }, 'at'],
  ])('refuses bad input naming the field (%#)', async (query, field) => {
    await expect(pricing.computeCost(query)).rejects.toEqual(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', field }),
    );
  });

  it('prices a call with the price in force at its instant: before, at and after an override', async () => {
    const from = T0 + HOUR;
    const set = await pricing.setPrice(
      {
        model: 'gpt-4o',
        inputUsdPerMtok: 2,
        outputUsdPerMtok: 8,
        cacheReadUsdPerMtok: 1,
        effectiveFrom: iso(from),
        reason: 'negotiated',
      },
      { actor: { keyId: 'operator', role: 'operator' }, correlationId: 'req-1' },
    );
    expect(set).toMatchObject({
      model: 'openai:gpt-4o',
      inputUsdPerMtok: 2,
      effectiveFrom: iso(from),
      contextWindowTokens: 128_000,
    });
    const cost = async (at: number) =>
      (await pricing.computeCost({ model: 'openai/gpt-4o-2024-08-06', inputTokens: 1_000_000, at: iso(at) }))
        .costUsd;
    expect(await cost(from - 1)).toBe(2.5);
    expect(await cost(from)).toBe(2);
    now = from + HOUR;
    expect(await cost(from + 1)).toBe(2);
    expect(await cost(from - 1)).toBe(2.5);
    // The dated first snapshot has its own catalogue price; the family's override does not touch it.
    expect((await pricing.getPrice('gpt-4o-2024-05-13')).inputUsdPerMtok).toBe(5);
    const [event] = await store.read('keel', 'pricing-catalogue');
    expect(event).toMatchObject({
      type: 'PriceSet',
      data: {
        key: 'openai:gpt-4o',
        inputUsdPerMtok: 2,
        effectiveFrom: iso(from),
        setAt: iso(T0),
        reason: 'negotiated',
      },
      metadata: { actor: { keyId: 'operator' }, correlationId: 'req-1' },
    });
  });

  it('keeps the history: a second override later, each instant priced by its own period', async () => {
    await pricing.setPrice(
      { model: 'claude-3.5-sonnet', inputUsdPerMtok: 4, outputUsdPerMtok: 16, effectiveFrom: iso(T0 + HOUR) },
      {},
    );
    await pricing.setPrice(
      {
        model: 'anthropic/claude-3-5-sonnet',
        inputUsdPerMtok: 5,
        outputUsdPerMtok: 20,
        effectiveFrom: iso(T0 + 2 * HOUR),
      },
      {},
    );
    now = T0 + 3 * HOUR;
    const input = async (at: number) =>
      (await pricing.getPrice('claude-3-5-sonnet-latest', iso(at))).inputUsdPerMtok;
    expect([await input(T0), await input(T0 + HOUR), await input(T0 + 2 * HOUR + 1)]).toEqual([3, 4, 5]);
    // An override without cache prices bills cache tokens at its input price.
    expect(
      (await pricing.computeCost({ model: 'claude-3-5-sonnet', cacheReadTokens: 1_000_000 })).costUsd,
    ).toBe(5);
  });

  it('an override stored under an alias is the entry’s: claude-4-sonnet and claude-sonnet-4 are one model', async () => {
    await pricing.setPrice(
      { model: 'anthropic:claude-4-sonnet', inputUsdPerMtok: 1, outputUsdPerMtok: 1 },
      {},
    );
    expect(await pricing.getPrice('claude-sonnet-4-20250514')).toMatchObject({
      model: 'anthropic:claude-sonnet-4',
      inputUsdPerMtok: 1,
    });
  });

  it('adds a model the catalogue does not know, from its instant on', async () => {
    await pricing.setPrice(
      {
        model: 'openai:gpt-9',
        inputUsdPerMtok: 10,
        outputUsdPerMtok: 30,
        contextWindowTokens: 500_000,
        effectiveFrom: iso(T0 + HOUR),
      },
      {},
    );
    now = T0 + 2 * HOUR;
    expect(
      (await pricing.computeCost({ model: 'gpt-9', outputTokens: 1_000_000, at: iso(T0) })).costUsd,
    ).toBeUndefined();
    expect(await pricing.computeCost({ model: 'gpt-9', outputTokens: 1_000_000 })).toMatchObject({
      costUsd: 30,
      price: { contextWindowTokens: 500_000 },
    });
    expect((await pricing.listModels()).map((p) => p.model)).toContain('openai:gpt-9');
  });

  it.each([
    [{ effectiveFrom: iso(T0 - HOUR) }, 'effectiveFrom'],
    [{ effectiveFrom: 'soon' }, 'effectiveFrom'],
    [{ inputUsdPerMtok: -1 }, 'inputUsdPerMtok'],
    [{ outputUsdPerMtok: Number.POSITIVE_INFINITY }, 'outputUsdPerMtok'],
    [{ cacheReadUsdPerMtok: -0.1 }, 'cacheReadUsdPerMtok'],
    [{ contextWindowTokens: -1 }, 'contextWindowTokens'],
    [{ model: 'llama3' }, 'model'],
  ])('refuses a bad override naming the field and writes nothing (%#)', async (change, field) => {
    await expect(
      pricing.setPrice({ model: 'gpt-4o', inputUsdPerMtok: 1, outputUsdPerMtok: 2, ...change }, {}),
    ).rejects.toEqual(expect.objectContaining({ field }));
    await expect(
      pricing.setPrice({ model: 'gpt-4o', inputUsdPerMtok: 1, outputUsdPerMtok: 2, ...change }, {}),
    ).rejects.toBeInstanceOf(ValidationError);
    expect(await store.read('keel', 'pricing-catalogue')).toEqual([]);
  });

  it('another instance sees an override at its next question, and a new instance rebuilds it from the log', async () => {
    const other = instance();
    expect((await other.getPrice('gpt-4o-mini')).inputUsdPerMtok).toBe(0.15);
    await pricing.setPrice({ model: 'gpt-4o-mini', inputUsdPerMtok: 0.1, outputUsdPerMtok: 0.5 }, {});
    now += 1;
    expect((await other.getPrice('gpt-4o-mini')).inputUsdPerMtok).toBe(0.1);
    const fresh = instance();
    expect(await fresh.loadOverrides()).toBe(1);
    expect((await fresh.getPrice('gpt-4o-mini', iso(T0 - 1))).inputUsdPerMtok).toBe(0.15);
    expect((await fresh.getPrice('gpt-4o-mini', iso(now))).inputUsdPerMtok).toBe(0.1);
  });
});
