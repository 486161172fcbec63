import { ResourceExhaustedError, UnavailableError, ValidationError } from '@keel/core';
import { fakeReply, lastUserMessageIncludes, startFakeOpenAI, type FakeOpenAI } from '@keel/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { PromptMessage, PromptTool } from '../prompt/prompt.js';
import { createModelStep } from './langchain-model-step.js';
import type { ModelStepInput } from './model-step.js';

const API_KEY = 'sk-test-secret-key-1234';

const weather: PromptTool = {
  name: 'get_weather',
  description: 'Current weather in a city',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

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

/** One call of the step against the fake, collecting the deltas it streams. */
function call(overrides: Partial<ModelStepInput> = {}, env: Record<string, string | undefined> = {}) {
  const deltas: string[] = [];
  const step = createModelStep({ env: { OPENAI_BASE_URL: fake.url, ...env }, maxRetries: 0 });
  const result = step({
    model: 'openai:gpt-4o-mini',
    credentials: { apiKey: API_KEY },
    messages: [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'hi' },
    ],
    tools: [],
    temperature: 0.2,
    signal: new AbortController().signal,
    onDelta: (text) => deltas.push(text),
    ...overrides,
  });
  return { result, deltas };
}

describe('createModelStep on OpenAI (the real @langchain/openai client against the fake server)', () => {
  it('streams text deltas in order that join to the answer, with usage and the model that answered', async () => {
    fake.script(
      fakeReply.text('Hello from the fake model.', {
        chunkSize: 5,
        model: 'gpt-4o-mini-2024-07-18',
        usage: { promptTokens: 120, completionTokens: 7, cachedTokens: 100 },
      }),
    );

    const { result, deltas } = call();
    const output = await result;

    expect(deltas).toEqual(['Hello', ' from', ' the ', 'fake ', 'model', '.']);
    expect(output.text).toBe('Hello from the fake model.');
    expect(output.toolCalls).toEqual([]);
    expect(output.usage).toEqual({
      promptTokens: 120,
      completionTokens: 7,
      cacheReadTokens: 100,
      cacheWriteTokens: 0,
    });
    expect(output.contextTokens).toBe(120);
    expect(output.model).toBe('openai:gpt-4o-mini-2024-07-18');
    expect(fake.requests[0]?.authorization).toEqual({ present: true, last4: '1234' });
  });

  it('returns tool calls with parsed arguments and the provider ids, after any text', async () => {
    fake.script(
      fakeReply.toolCalls(
        [
          { id: 'call_paris', name: 'get_weather', arguments: { city: 'Paris' } },
          { id: 'call_oslo', name: 'get_weather', arguments: { city: 'Oslo' } },
        ],
        { text: 'Let me check.', argumentsChunkSize: 3 },
      ),
    );

    const { result, deltas } = call({ tools: [weather] });
    const output = await result;

    expect(output.text).toBe('Let me check.');
    expect(deltas.join('')).toBe('Let me check.');
    expect(output.toolCalls).toEqual([
      { toolCallId: 'call_paris', name: 'get_weather', args: { city: 'Paris' } },
      { toolCallId: 'call_oslo', name: 'get_weather', args: { city: 'Oslo' } },
    ]);
  });

  it('returns a tool call whose arguments are not JSON with the raw string as args', async () => {
    fake.script(
      fakeReply.toolCalls([
        { id: 'call_bad', name: 'get_weather', arguments: '{"city": "Par' },
        { id: 'call_worse', name: 'get_weather', arguments: 'city=Paris' },
        { id: 'call_none', name: 'get_weather', arguments: '' },
      ]),
    );

    const output = await call({ tools: [weather] }).result;

    expect(output.toolCalls).toEqual([
      { toolCallId: 'call_bad', name: 'get_weather', args: '{"city": "Par' },
      { toolCallId: 'call_worse', name: 'get_weather', args: 'city=Paris' },
      { toolCallId: 'call_none', name: 'get_weather', args: {} },
    ]);
  });

  it('sends the system prompt first, past tool calls and results, the tool schemas and the temperature', async () => {
    fake.script('It is sunny in Paris.');
    const messages: PromptMessage[] = [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [
          { id: 'call_1', name: 'get_weather', args: { city: 'Paris' } },
          { id: 'call_2', name: 'get_weather', args: '{"city": broken' },
        ],
      },
      { role: 'tool', toolCallId: 'call_1', content: '{"sky":"sunny"}' },
      { role: 'tool', toolCallId: 'call_2', content: '{"error":"invalid_arguments"}' },
    ];

    const output = await call({ messages, tools: [weather], temperature: 0.3 }).result;

    expect(output.text).toBe('It is sunny in Paris.');
    const body = fake.requests[0]?.body;
    expect(body?.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'tool']);
    expect(body?.messages[0]?.content).toBe('You are terse.');
    expect(body?.messages[2]?.tool_calls).toEqual([
      { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
      { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{}' } },
    ]);
    expect(body?.messages[3]).toMatchObject({
      role: 'tool',
      tool_call_id: 'call_1',
      content: '{"sky":"sunny"}',
    });
    expect(body?.messages[4]).toMatchObject({ role: 'tool', tool_call_id: 'call_2' });
    expect(body?.tools).toEqual([
      {
        type: 'function',
        function: expect.objectContaining({
          name: 'get_weather',
          description: 'Current weather in a city',
          parameters: weather.inputSchema,
        }),
      },
    ]);
    expect(body?.temperature).toBe(0.3);
    expect(body?.stream).toBe(true);
    expect(body?.stream_options).toEqual({ include_usage: true });
  });

  it('sends no tools when the agent has none', async () => {
    fake.script('ok');
    await call().result;
    expect(fake.requests[0]?.body?.tools).toBeUndefined();
  });

  it('rejects with an AbortError mid-stream, and the provider connection closes', async () => {
    fake.on(
      lastUserMessageIncludes('stall'),
      fakeReply.text('partial answer that never ends', { chunkSize: 4, stallAfterChunks: 3 }),
    );
    const controller = new AbortController();
    const { result, deltas } = call({
      messages: [{ role: 'user', content: 'stall please' }],
      signal: controller.signal,
      onDelta: (text) => {
        deltas.push(text);
        if (deltas.join('') === 'partial ') controller.abort();
      },
    });

    await expect(result).rejects.toMatchObject({ name: 'AbortError' });
    expect(deltas.join('')).toBe('partial ');
    expect((await fake.waitForClientClose(0, 2_000)).closedByClient).toBe(true);
  });

  it('rejects promptly with an AbortError while the provider has not answered at all', async () => {
    fake.script(fakeReply.hang());
    const controller = new AbortController();
    const { result } = call({ signal: controller.signal });
    await fake.waitForRequest(0, 2_000);

    const started = Date.now();
    controller.abort(new Error('turn cancelled'));

    await expect(result).rejects.toMatchObject({ name: 'AbortError' });
    expect(Date.now() - started).toBeLessThan(500);
    expect((await fake.waitForClientClose(0, 2_000)).closedByClient).toBe(true);
  });

  it('rejects an already aborted call without sending anything', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(call({ signal: controller.signal }).result).rejects.toMatchObject({ name: 'AbortError' });
    expect(fake.requests).toHaveLength(0);
  });

  it('turns a provider 500 into an UnavailableError with the provider message', async () => {
    fake.script(fakeReply.error(500, 'the upstream model exploded'));

    const failure = call().result;

    await expect(failure).rejects.toBeInstanceOf(UnavailableError);
    await expect(failure).rejects.toThrow(/openai answered 500: .*the upstream model exploded/);
  });

  it('turns a provider 4xx into a ValidationError that never shows the key', async () => {
    fake.script(fakeReply.error(401, `Incorrect API key provided: ${API_KEY}`, { code: 'invalid_api_key' }));

    const error: unknown = await call().result.catch((e: unknown) => e);

    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(/openai answered 401: .*Incorrect API key provided/);
    expect((error as Error).message).not.toContain(API_KEY);
    expect((error as Error).cause).toBeUndefined();
  });

  it('turns a rate limit into a ResourceExhaustedError', async () => {
    fake.script(fakeReply.error(429, 'slow down'));
    await expect(call().result).rejects.toBeInstanceOf(ResourceExhaustedError);
  });

  it('turns an unreachable provider into an UnavailableError', async () => {
    const gone = await startFakeOpenAI();
    const url = gone.url;
    await gone.close();

    const failure = call({}, { OPENAI_BASE_URL: url }).result;

    await expect(failure).rejects.toBeInstanceOf(UnavailableError);
    await expect(failure).rejects.toThrow(/openai could not be reached/);
  });

  it('fails clearly, naming OPENAI_API_KEY, when no key is configured', async () => {
    const failure = call({ credentials: {} }, { OPENAI_API_KEY: undefined }).result;

    await expect(failure).rejects.toBeInstanceOf(ValidationError);
    await expect(failure).rejects.toThrow(/no API key for provider "openai".*OPENAI_API_KEY/);
    expect(fake.requests).toHaveLength(0);
  });

  it('uses OPENAI_API_KEY from the environment when the tenant has no key', async () => {
    fake.script('ok');
    await call({ credentials: {} }, { OPENAI_API_KEY: 'sk-from-env-9876' }).result;
    expect(fake.requests[0]?.authorization).toEqual({ present: true, last4: '9876' });
  });

  it.each([
    ['gpt-4o-mini', /must be "provider:model"/],
    ['mistral:large', /unknown model provider "mistral"/],
    ['anthropic:claude-sonnet-4-5', /ANTHROPIC_API_KEY/],
    ['google:gemini-2.5-flash', /GOOGLE_API_KEY/],
  ])('refuses model %s with a ValidationError', async (model, message) => {
    const failure = call({ model, credentials: {} }).result;
    await expect(failure).rejects.toBeInstanceOf(ValidationError);
    await expect(failure).rejects.toThrow(message);
  });
});
