import { describe, expect, it } from 'vitest';
import { modelKeyCandidates, normaliseModelId } from './model-id.js';

describe('normaliseModelId', () => {
  it.each([
    // provider prefixes, as SDKs and gateways spell them
    ['openai:gpt-4o', 'openai:gpt-4o'],
    ['openai/gpt-4o', 'openai:gpt-4o'],
    ['OpenAI:GPT-4o', 'openai:gpt-4o'],
    ['  gpt-4o  ', 'openai:gpt-4o'],
    ['gpt-4o-2024-08-06', 'openai:gpt-4o-2024-08-06'],
    ['o3-mini', 'openai:o3-mini'],
    ['o1', 'openai:o1'],
    ['chatgpt-4o-latest', 'openai:chatgpt-4o-latest'],
    // dots and dashes are one spelling
    ['gpt-4.1-mini', 'openai:gpt-4-1-mini'],
    ['claude-3.5-sonnet', 'anthropic:claude-3-5-sonnet'],
    ['anthropic/claude-3.5-sonnet', 'anthropic:claude-3-5-sonnet'],
    ['anthropic:claude-3-5-sonnet-20241022', 'anthropic:claude-3-5-sonnet-20241022'],
    ['openrouter/anthropic/claude-3.7-sonnet', 'anthropic:claude-3-7-sonnet'],
    // Bedrock: region, `anthropic.` and the `-v2:0` version
    ['anthropic.claude-3-5-sonnet-20241022-v2:0', 'anthropic:claude-3-5-sonnet-20241022'],
    ['us.anthropic.claude-3-7-sonnet-20250219-v1:0', 'anthropic:claude-3-7-sonnet-20250219'],
    ['bedrock/anthropic.claude-3-haiku-20240307-v1:0', 'anthropic:claude-3-haiku-20240307'],
    // Google's own and gateways' prefixes
    ['models/gemini-1.5-pro', 'google:gemini-1-5-pro'],
    ['gemini/gemini-2.0-flash', 'google:gemini-2-0-flash'],
    ['vertex_ai/gemini-2.5-pro', 'google:gemini-2-5-pro'],
    ['google:gemini-1.5-flash-002', 'google:gemini-1-5-flash-002'],
    // an OpenAI-compatible gateway reached through the openai provider
    ['openai:anthropic/claude-3.5-sonnet', 'anthropic:claude-3-5-sonnet'],
    // variants stay
    ['anthropic/claude-3.7-sonnet:thinking', 'anthropic:claude-3-7-sonnet:thinking'],
    ['claude-sonnet-4:thinking', 'anthropic:claude-sonnet-4:thinking'],
    ['o1:thinking', 'openai:o1:thinking'],
    // local models keep their tags as they are
    ['ollama:llama3.1:8b', 'ollama:llama3.1:8b'],
    ['ollama/qwen2.5', 'ollama:qwen2.5'],
    ['demo:keel-demo', 'demo:keel-demo'],
    ['keel-demo', 'demo:keel-demo'],
  ])('%s → %s', (raw, key) => {
    expect(normaliseModelId(raw)?.key).toBe(key);
  });

  it.each([
    ['', 'empty'],
    ['   ', 'blank'],
    ['llama3', 'no provider and no known family'],
    ['mistral/mistral-large', 'a provider Keel does not price'],
    ['azure/gpt-4o', 'another host of the model, priced its own way'],
    ['ft:gpt-4o-mini:acme::abc123', 'a fine-tune, priced differently'],
    ['openai:', 'a provider with no model'],
    ['gpt 4o', 'whitespace inside'],
    ['claude-3-5-sonnet:', 'an empty variant'],
  ])('%s has no key (%s)', (raw) => {
    expect(normaliseModelId(raw)).toBeUndefined();
  });
});

describe('modelKeyCandidates', () => {
  it.each([
    ['gpt-4o-2024-08-06', ['openai:gpt-4o-2024-08-06', 'openai:gpt-4o', 'openai:*']],
    ['gpt-4o', ['openai:gpt-4o', 'openai:*']],
    ['gpt-3.5-turbo-0125', ['openai:gpt-3-5-turbo-0125', 'openai:gpt-3-5-turbo', 'openai:*']],
    ['gpt-4.1-2025-04-14', ['openai:gpt-4-1-2025-04-14', 'openai:gpt-4-1', 'openai:*']],
    [
      'claude-3-5-sonnet-latest',
      ['anthropic:claude-3-5-sonnet-latest', 'anthropic:claude-3-5-sonnet', 'anthropic:*'],
    ],
    [
      'claude-3-7-sonnet-20250219:thinking',
      [
        'anthropic:claude-3-7-sonnet-20250219:thinking',
        'anthropic:claude-3-7-sonnet:thinking',
        'anthropic:*',
      ],
    ],
    ['gemini-1.5-pro-002', ['google:gemini-1-5-pro-002', 'google:gemini-1-5-pro', 'google:*']],
    [
      'gemini-2.5-pro-preview-05-06',
      ['google:gemini-2-5-pro-preview-05-06', 'google:gemini-2-5-pro-preview', 'google:*'],
    ],
    ['ollama:llama3.1:8b', ['ollama:llama3.1:8b', 'ollama:*']],
    ['nothing-known', []],
  ])('%s → %j', (raw, candidates) => {
    expect(modelKeyCandidates(raw)).toEqual(candidates);
  });

  it('never offers the base model for a variant', () => {
    for (const raw of ['anthropic/claude-sonnet-4:thinking', 'gpt-4o:free', 'gemini-2.5-flash:thinking']) {
      const base = normaliseModelId(raw)!.key.replace(/:[^:]+$/, '');
      expect(modelKeyCandidates(raw)).not.toContain(base);
    }
  });
});

describe('normaliseModelId with prototype names as prefixes', () => {
  it('reads a prototype member name as an unknown prefix, like any other word', () => {
    for (const prefix of ['constructor', 'tostring', 'valueof', 'hasownproperty', '__proto__']) {
      expect(normaliseModelId(`${prefix}:gpt-4o-mini`)).toEqual(normaliseModelId('acme:gpt-4o-mini'));
    }
  });
});
