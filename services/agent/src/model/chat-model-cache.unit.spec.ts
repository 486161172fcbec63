// One model step's chat models are built once per key and options and reused, and yet every call
// goes out as if its model were built for it: its own key, endpoint, temperature, options and tools.
import { ValidationError } from '@keel/core';
import { fakeReply, startFakeOpenAI, type FakeOpenAI } from '@keel/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { PromptTool } from '../prompt/prompt.js';
import { ChatModelCache } from './chat-model-cache.js';
import type { ChatModelSettings } from './chat-models.js';
import { toFunctionTools } from './langchain-messages.js';
import { createModelStep } from './langchain-model-step.js';
import type { ModelStepInput } from './model-step.js';

const weather: PromptTool = {
  name: 'get_weather',
  description: 'Current weather in a city',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

const settings = (overrides: Partial<ChatModelSettings> = {}): ChatModelSettings => ({
  credentials: { apiKey: 'sk-tenant-a-0001' },
  temperature: 0.2,
  maxRetries: 2,
  env: {},
  demoWordDelayMs: 0,
  ...overrides,
});

describe('ChatModelCache', () => {
  it('builds a model once for the same key and options, another for anything its constructor takes', () => {
    const cache = new ChatModelCache();
    const first = cache.modelFor('openai', 'gpt-4o-mini', settings());
    expect(cache.modelFor('openai', 'gpt-4o-mini', settings()).chat).toBe(first.chat);
    const others = [
      cache.modelFor('openai', 'gpt-4o', settings()),
      cache.modelFor('openai', 'gpt-4o-mini', settings({ credentials: { apiKey: 'sk-tenant-b-0002' } })),
      cache.modelFor('openai', 'gpt-4o-mini', settings({ temperature: 0.7 })),
      cache.modelFor('openai', 'gpt-4o-mini', settings({ maxRetries: 0 })),
      cache.modelFor('openai', 'gpt-4o-mini', settings({ providerOptions: { topP: 0.5 } })),
    ];
    for (const other of others) expect(other.chat).not.toBe(first.chat);
    expect(others[1]!.apiKey).toBe('sk-tenant-b-0002');
  });

  it('follows the platform key and endpoint as the environment has them', () => {
    const cache = new ChatModelCache();
    const env: Record<string, string | undefined> = { OPENAI_API_KEY: 'sk-platform-1111' };
    const before = cache.modelFor('openai', 'gpt-4o-mini', settings({ credentials: {}, env }));
    env['OPENAI_API_KEY'] = 'sk-platform-2222';
    const after = cache.modelFor('openai', 'gpt-4o-mini', settings({ credentials: {}, env }));
    expect(after.chat).not.toBe(before.chat);
    expect(after.apiKey).toBe('sk-platform-2222');
  });

  it('keeps no model it could not build, and no key in clear', () => {
    const cache = new ChatModelCache();
    const env: Record<string, string | undefined> = {};
    expect(() => cache.modelFor('openai', 'gpt-4o-mini', settings({ credentials: {}, env }))).toThrow(
      ValidationError,
    );
    env['OPENAI_API_KEY'] = 'sk-platform-3333';
    expect(cache.modelFor('openai', 'gpt-4o-mini', settings({ credentials: {}, env })).apiKey).toBe(
      'sk-platform-3333',
    );
    cache.modelFor('openai', 'gpt-4o-mini', settings());
    const keys = [...(cache as unknown as { models: Map<string, unknown> }).models.keys()];
    expect(keys).toHaveLength(2);
    for (const key of keys) expect(key).toMatch(/^[0-9a-f]{64}$/);
  });

  it('binds a model to a tool list once, and to each other list apart; the binding keeps its own copy', () => {
    const cache = new ChatModelCache();
    const tools = () => toFunctionTools([weather]);
    const first = cache.boundFor('openai', 'gpt-4o-mini', settings(), tools());
    expect(first.chat).toBe(cache.modelFor('openai', 'gpt-4o-mini', settings()).chat);
    expect(cache.boundFor('openai', 'gpt-4o-mini', settings(), tools()).bound).toBe(first.bound);
    const renamed = tools();
    renamed[0]!.function.name = 'get_forecast';
    const other = cache.boundFor('openai', 'gpt-4o-mini', settings(), renamed);
    expect(other.bound).not.toBe(first.bound);
    expect(cache.boundFor('openai', 'gpt-4o', settings(), tools()).bound).not.toBe(first.bound);
    // What the caller does with its objects afterwards changes no binding.
    renamed[0]!.function.name = 'changed_later';
    const boundTools = (
      other.bound as unknown as { defaultOptions: { tools: Array<{ function: { name: string } }> } }
    ).defaultOptions.tools;
    expect(boundTools.map((t) => t.function.name)).toEqual(['get_forecast']);
  });

  it('forgets the least recently used model past its capacity', () => {
    const cache = new ChatModelCache(2);
    const a = cache.modelFor('openai', 'a', settings()).chat;
    const b = cache.modelFor('openai', 'b', settings()).chat;
    expect(cache.modelFor('openai', 'a', settings()).chat).toBe(a);
    cache.modelFor('openai', 'c', settings());
    expect(cache.modelFor('openai', 'a', settings()).chat).toBe(a);
    expect(cache.modelFor('openai', 'b', settings()).chat).not.toBe(b);
  });
});

describe('a model step reusing its models (the real @langchain/openai client against the fake server)', () => {
  let fake: FakeOpenAI;
  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });
  afterAll(async () => {
    await fake.close();
  });
  beforeEach(() => {
    fake.reset();
  });

  it('sends each call with its own key, temperature and tools, whatever the calls before it', async () => {
    const step = createModelStep({ env: { OPENAI_BASE_URL: fake.url }, maxRetries: 0 });
    const call = (overrides: Partial<ModelStepInput>) =>
      step({
        model: 'openai:gpt-4o-mini',
        credentials: { apiKey: 'sk-tenant-a-aaaa' },
        messages: [{ role: 'user', content: 'hi' }],
        tools: [],
        temperature: 0.2,
        signal: new AbortController().signal,
        onDelta: () => {},
        ...overrides,
      });
    fake.script(...Array.from({ length: 6 }, () => fakeReply.text('ok')));
    await call({ tools: [weather] });
    await call({});
    await call({ credentials: { apiKey: 'sk-tenant-b-bbbb' } });
    await call({ temperature: 0.9, tools: [weather] });
    // Two calls at once on the same model, one with tools: each request has its own.
    await Promise.all([call({ tools: [weather] }), call({})]);
    const sent = fake.requests.map((r) => ({
      key: r.authorization.last4,
      temperature: r.body?.temperature,
      tools: (r.body?.tools ?? []).map((t) => t.function.name),
    }));
    expect(sent.slice(0, 4)).toEqual([
      { key: 'aaaa', temperature: 0.2, tools: ['get_weather'] },
      { key: 'aaaa', temperature: 0.2, tools: [] },
      { key: 'bbbb', temperature: 0.2, tools: [] },
      { key: 'aaaa', temperature: 0.9, tools: ['get_weather'] },
    ]);
    expect(sent.slice(4).sort((x, y) => x.tools.length - y.tools.length)).toEqual([
      { key: 'aaaa', temperature: 0.2, tools: [] },
      { key: 'aaaa', temperature: 0.2, tools: ['get_weather'] },
    ]);
  });
});
