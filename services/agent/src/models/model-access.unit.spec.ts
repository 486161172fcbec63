import { describe, expect, it } from 'vitest';
import { configuredProviders } from './model-access.js';

const sealed = { v: 1 as const, iv: 'i', tag: 't', data: 'd' };

describe('configuredProviders', () => {
  it('names the demo provider and the ones with a platform credential', () => {
    expect(configuredProviders({}, { OPENAI_API_KEY: 'sk-x' })).toEqual(['demo', 'openai']);
  });

  it("names a provider with the tenant's own key, and not one with a baseUrl but no key", () => {
    const providers = { anthropic: { apiKey: sealed }, openai: { baseUrl: 'https://llm.example' } };
    expect(configuredProviders(providers, { OPENAI_API_KEY: 'sk-x' })).toEqual(['anthropic', 'demo']);
  });

  it("names ollama with the tenant's server or the platform's OLLAMA_HOST", () => {
    expect(configuredProviders({ ollama: { baseUrl: 'http://ollama.example' } }, {})).toEqual([
      'demo',
      'ollama',
    ]);
    expect(configuredProviders({}, { OLLAMA_HOST: '127.0.0.1:11434' })).toEqual(['demo', 'ollama']);
  });
});
