import { describe, expect, it } from 'vitest';
import { Catalogue } from './catalogue.js';
import { loadCatalogueFile } from './catalogue-file.js';

const shipped = loadCatalogueFile();

describe('the shipped catalogue (catalogue/models.json)', () => {
  it('has a version and prices the families the platform promises', () => {
    expect(shipped.version).toMatch(/^\d{4}-\d{2}-\d{2}\.\d+$/);
    const models = shipped.prices().map((p) => p.model);
    for (const model of [
      'openai:gpt-4o',
      'openai:gpt-4o-mini',
      'openai:gpt-4.1',
      'openai:gpt-4.1-mini',
      'openai:o3-mini',
      'openai:gpt-5',
      'anthropic:claude-3-5-sonnet',
      'anthropic:claude-3-7-sonnet',
      'anthropic:claude-3-5-haiku',
      'anthropic:claude-sonnet-4',
      'anthropic:claude-opus-4-1',
      'google:gemini-1.5-pro',
      'google:gemini-1.5-flash',
      'google:gemini-2.0-flash',
      'google:gemini-2.5-pro',
      'google:gemini-2.5-flash',
      'ollama:*',
      'demo:keel-demo',
    ]) {
      expect(models).toContain(model);
    }
  });

  it('has a source and an as-of date per entry, and sane prices', () => {
    for (const entry of shipped.entries) {
      expect(entry.source, entry.model).not.toBe('');
      expect(entry.asOf, entry.model).toMatch(/^20\d{2}-\d{2}-\d{2}$/);
      // Cache reads are cheaper than input; output costs at least input (true of every listed model).
      if (entry.cacheReadUsdPerMtok !== undefined) {
        expect(entry.cacheReadUsdPerMtok, entry.model).toBeLessThanOrEqual(entry.inputUsdPerMtok);
      }
      expect(entry.outputUsdPerMtok, entry.model).toBeGreaterThanOrEqual(entry.inputUsdPerMtok);
    }
  });

  it.each([
    ['gpt-4o-2024-08-06', 'openai:gpt-4o', 2.5, 10],
    ['openai/gpt-4o', 'openai:gpt-4o', 2.5, 10],
    // the first gpt-4o snapshot keeps its own, higher price
    ['gpt-4o-2024-05-13', 'openai:gpt-4o-2024-05-13', 5, 15],
    ['gpt-4o-mini-2024-07-18', 'openai:gpt-4o-mini', 0.15, 0.6],
    ['gpt-3.5-turbo-0125', 'openai:gpt-3.5-turbo', 0.5, 1.5],
    // older snapshots whose own price differs from the family's
    ['gpt-3.5-turbo-1106', 'openai:gpt-3.5-turbo-1106', 1, 2],
    ['gpt-4-1106-preview', 'openai:gpt-4-turbo', 10, 30],
    ['gpt-4-0613', 'openai:gpt-4', 30, 60],
    ['openai:gpt-4.1-2025-04-14', 'openai:gpt-4.1', 2, 8],
    ['claude-3-5-sonnet-20241022', 'anthropic:claude-3-5-sonnet', 3, 15],
    ['anthropic.claude-3-5-sonnet-20241022-v2:0', 'anthropic:claude-3-5-sonnet', 3, 15],
    ['anthropic/claude-3.7-sonnet', 'anthropic:claude-3-7-sonnet', 3, 15],
    ['anthropic/claude-3.7-sonnet:thinking', 'anthropic:claude-3-7-sonnet:thinking', 3, 15],
    ['claude-4-sonnet', 'anthropic:claude-sonnet-4', 3, 15],
    ['claude-sonnet-4-20250514', 'anthropic:claude-sonnet-4', 3, 15],
    ['models/gemini-1.5-pro-002', 'google:gemini-1.5-pro', 1.25, 5],
    ['gemini-2.5-pro-preview-05-06', 'google:gemini-2.5-pro', 1.25, 10],
    ['ollama:llama3.1:8b', 'ollama:*', 0, 0],
    ['demo:keel-demo', 'demo:keel-demo', 0, 0],
  ])('%s is priced as %s', (raw, model, input, output) => {
    const price = shipped.lookup(raw);
    expect(price).toMatchObject({ model, inputUsdPerMtok: input, outputUsdPerMtok: output });
  });

  it.each([
    'anthropic/claude-sonnet-4:thinking',
    'gpt-4o:free',
    'openai:gpt-9',
    'mistral/mistral-large',
    'gemini-2.5-flash-preview-04-17',
  ])('%s is unknown (never its base model, never 0)', (raw) => {
    expect(shipped.lookup(raw)).toBeUndefined();
  });
});

describe('Catalogue.parse', () => {
  const entry = {
    model: 'openai:gpt-x',
    inputUsdPerMtok: 1,
    outputUsdPerMtok: 2,
    contextWindowTokens: 1000,
    source: 'test',
    asOf: '2025-01-01',
  };

  it.each([
    [{ models: [] }, 'version'],
    [{ version: '1', models: {} }, 'models'],
    [{ version: '1', models: [{ ...entry, inputUsdPerMtok: -1 }] }, 'models[0].inputUsdPerMtok'],
    [{ version: '1', models: [{ ...entry, outputUsdPerMtok: '2' }] }, 'models[0].outputUsdPerMtok'],
    [
      { version: '1', models: [{ ...entry, cacheReadUsdPerMtok: Number.NaN }] },
      'models[0].cacheReadUsdPerMtok',
    ],
    [{ version: '1', models: [{ ...entry, contextWindowTokens: 1.5 }] }, 'models[0].contextWindowTokens'],
    [{ version: '1', models: [{ ...entry, asOf: 'yesterday' }] }, 'models[0].asOf'],
    [{ version: '1', models: [entry, { ...entry, model: 'gpt-x' }] }, 'model'],
  ])('refuses a malformed file, naming the field (%#)', (document, field) => {
    expect(() => Catalogue.parse(document)).toThrow(expect.objectContaining({ field }));
  });
});
