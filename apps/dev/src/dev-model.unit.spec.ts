import { describe, expect, it } from 'vitest';
import { devModelFrom } from './dev-model.js';

describe("the dev agent's model", () => {
  it('is the demo model without any provider key', () => {
    expect(devModelFrom({})).toEqual({
      model: 'demo:keel-demo',
      reason: 'no provider API key set: the built-in demo model',
    });
    expect(devModelFrom({ OPENAI_API_KEY: '  ' }).model).toBe('demo:keel-demo');
  });

  it("is the first provider's small model whose key is set, and says which key", () => {
    expect(devModelFrom({ ANTHROPIC_API_KEY: 'a', GOOGLE_API_KEY: 'g' })).toEqual({
      model: 'anthropic:claude-3-5-haiku-latest',
      reason: 'ANTHROPIC_API_KEY is set',
    });
    expect(devModelFrom({ GOOGLE_API_KEY: 'g' }).model).toBe('google:gemini-1.5-flash');
    expect(devModelFrom({ OPENAI_API_KEY: 'o', GOOGLE_API_KEY: 'g' }).model).toBe('openai:gpt-4o-mini');
  });

  it('is KEEL_DEV_MODEL when set, whatever keys there are', () => {
    expect(devModelFrom({ KEEL_DEV_MODEL: 'ollama:llama3.2:3b', OPENAI_API_KEY: 'o' })).toEqual({
      model: 'ollama:llama3.2:3b',
      reason: 'KEEL_DEV_MODEL',
    });
  });
});
