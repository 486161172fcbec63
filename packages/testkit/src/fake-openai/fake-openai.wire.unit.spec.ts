import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAI } from './fake-openai.js';
import { fakeReply, lastUserMessageIncludes } from './script.js';

let fake: FakeOpenAI;

beforeAll(async () => {
  fake = await startFakeOpenAI({ models: ['gpt-4o-mini', 'gpt-4.1'] });
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => {
  fake.reset();
});

function chat(body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return fetch(`${fake.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-secret-abcd', ...headers },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], ...body }),
  });
}

/** The SSE events of a response, checking the `data: …\n\n` framing on the way. */
async function events(response: Response): Promise<string[]> {
  const text = await response.text();
  expect(text.endsWith('\n\n')).toBe(true);
  const frames = text.slice(0, -2).split('\n\n');
  for (const frame of frames) expect(frame).toMatch(/^data: /);
  return frames.map((frame) => frame.slice('data: '.length));
}

describe('fake OpenAI server on the wire', () => {
  it('streams tool calls as OpenAI does: a header delta per call, then index + arguments fragments', async () => {
    fake.script(
      fakeReply.toolCalls(
        [
          { id: 'call_a', name: 'lookup', arguments: { q: 'first' } },
          { name: 'lookup', arguments: '{"q":"second"}' },
        ],
        { argumentsChunkSize: 5, usage: { promptTokens: 40, completionTokens: 12, cachedTokens: 32 } },
      ),
    );

    const response = await chat({ stream: true, stream_options: { include_usage: true } });

    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const data = await events(response);
    expect(data.at(-1)).toBe('[DONE]');
    const chunks = data.slice(0, -1).map((json) => JSON.parse(json) as Record<string, unknown>);
    for (const chunk of chunks) {
      expect(chunk).toMatchObject({
        id: 'chatcmpl-fake-0',
        object: 'chat.completion.chunk',
        model: 'gpt-4o-mini',
      });
      expect(typeof chunk['created']).toBe('number');
    }
    const deltas = chunks
      .slice(0, -1)
      .map((chunk) => (chunk['choices'] as Array<{ delta: unknown }>)[0]?.delta);
    expect(deltas[0]).toEqual({
      role: 'assistant',
      content: null,
      refusal: null,
      tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'lookup', arguments: '' } }],
    });
    const secondHeader = deltas.findIndex((delta) => JSON.stringify(delta).includes('"index":1,"id"'));
    expect(deltas[secondHeader]).toEqual({
      tool_calls: [
        { index: 1, id: 'call_fake_0_1', type: 'function', function: { name: 'lookup', arguments: '' } },
      ],
    });
    const fragments = deltas.slice(1, -1).filter((_, i) => i + 1 !== secondHeader);
    expect(fragments.length).toBeGreaterThan(4);
    for (const fragment of fragments) {
      expect(fragment).toEqual({
        tool_calls: [{ index: expect.any(Number), function: { arguments: expect.any(String) } }],
      });
    }
    const args = (index: number) =>
      fragments
        .map(
          (f) =>
            (f as { tool_calls: Array<{ index: number; function: { arguments: string } }> }).tool_calls[0],
        )
        .filter((call) => call?.index === index)
        .map((call) => call?.function.arguments)
        .join('');
    expect([args(0), args(1)]).toEqual(['{"q":"first"}', '{"q":"second"}']);
    expect(chunks.at(-2)).toMatchObject({
      choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }],
      usage: null,
    });
    expect(chunks.at(-1)).toMatchObject({
      choices: [],
      usage: {
        prompt_tokens: 40,
        completion_tokens: 12,
        total_tokens: 52,
        prompt_tokens_details: { cached_tokens: 32 },
      },
    });
  });

  it('streams text ending in finish_reason stop, with no usage chunk unless include_usage is asked for', async () => {
    fake.script(fakeReply.text('abcdef', { chunkSize: 2, chunkDelayMs: 20 }));
    const started = Date.now();

    const data = await events(await chat({ stream: true }));

    expect(Date.now() - started).toBeGreaterThanOrEqual(20 * (data.length - 1) - 5);
    const chunks = data
      .slice(0, -1)
      .map((json) => JSON.parse(json) as { choices: unknown[]; usage?: unknown });
    expect(chunks.map((chunk) => chunk.choices[0])).toEqual([
      {
        index: 0,
        delta: { role: 'assistant', content: '', refusal: null },
        logprobs: null,
        finish_reason: null,
      },
      { index: 0, delta: { content: 'ab' }, logprobs: null, finish_reason: null },
      { index: 0, delta: { content: 'cd' }, logprobs: null, finish_reason: null },
      { index: 0, delta: { content: 'ef' }, logprobs: null, finish_reason: null },
      { index: 0, delta: {}, logprobs: null, finish_reason: 'stop' },
    ]);
    expect(chunks.some((chunk) => 'usage' in chunk)).toBe(false);
  });

  it('answers stream: false with a chat.completion carrying tool calls and usage', async () => {
    fake.script(fakeReply.toolCall('lookup', { q: 'x' }, { id: 'call_x', model: 'gpt-4o-mini-2024-07-18' }));

    const body = await (await chat({ stream: false })).json();

    expect(body).toMatchObject({
      object: 'chat.completion',
      model: 'gpt-4o-mini-2024-07-18',
      choices: [
        {
          finish_reason: 'tool_calls',
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'call_x', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } },
            ],
          },
        },
      ],
      usage: {
        prompt_tokens: 1,
        completion_tokens: 4,
        total_tokens: 5,
        prompt_tokens_details: { cached_tokens: 0 },
      },
    });
  });

  it('sends scripted errors with their status, OpenAI error body and headers', async () => {
    fake.script(
      fakeReply.error(429, 'slow down', { code: 'rate_limit_exceeded', headers: { 'retry-after': '0' } }),
    );

    const response = await chat({});

    expect(response.status).toBe(429);
    expect(response.headers.get('retry-after')).toBe('0');
    expect(await response.json()).toEqual({
      error: {
        message: 'slow down',
        type: 'invalid_request_error',
        param: null,
        code: 'rate_limit_exceeded',
      },
    });
  });

  it('routes keyed requests to their own queue and the rest to the default queue', async () => {
    fake.script('default reply');
    fake.on(lastUserMessageIncludes('[conv-7]'), 'keyed reply');
    const ask = async (content: string) => {
      const body = (await (await chat({ messages: [{ role: 'user', content }] })).json()) as {
        choices: Array<{ message: { content: string } }>;
      };
      return body.choices[0]?.message.content;
    };

    expect(await ask('plain')).toBe('default reply');
    expect(await ask('[conv-7] hello')).toBe('keyed reply');
    const unscripted = await chat({ messages: [{ role: 'user', content: '[conv-7] again' }] });
    expect(unscripted.status).toBe(500);
    expect(unscripted.headers.get('x-should-retry')).toBe('false');
    expect(await unscripted.text()).toContain('no scripted reply for request #2');
  });

  it('records headers with the API key redacted to its last 4 characters', async () => {
    fake.script('one', 'two');

    await chat({ temperature: 0.2, tool_choice: 'auto' });
    await fetch(`${fake.url}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'm', messages: [] }),
    });

    const [withKey, withoutKey] = fake.requests;
    expect(withKey).toMatchObject({
      index: 0,
      method: 'POST',
      path: '/v1/chat/completions',
      body: { temperature: 0.2, tool_choice: 'auto' },
      authorization: { present: true, last4: 'abcd' },
      reply: 'text',
      status: 200,
      closedByClient: false,
    });
    expect(withKey?.headers['content-type']).toBe('application/json');
    expect(JSON.stringify(withKey)).not.toContain('sk-secret');
    expect(withKey?.finishedAt).toBeGreaterThanOrEqual(withKey?.receivedAt ?? Infinity);
    expect(withoutKey?.authorization).toEqual({ present: false });
  });

  it('serves GET /v1/models and rejects unknown paths and bodies that are not chat requests', async () => {
    const models = (await (await fetch(`${fake.url}/models`)).json()) as { data: Array<{ id: string }> };
    const unknown = await fetch(`${fake.url}/embeddings`, { method: 'POST', body: '{}' });
    const notJson = await fetch(`${fake.url}/chat/completions`, { method: 'POST', body: 'nope' });

    expect(models.data.map((model) => model.id)).toEqual(['gpt-4o-mini', 'gpt-4.1']);
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toContain('unknown request URL: POST /v1/embeddings');
    expect(notJson.status).toBe(400);
    expect(await notJson.text()).toContain('the body is not JSON');
    expect(fake.requests.map((request) => request.reply)).toEqual(['models', 'invalid', 'invalid']);
    expect(fake.pendingReplies()).toBe(0);
  });

  it('says clearly what it was waiting for when a wait times out', async () => {
    fake.script('done');
    await chat({});

    await expect(fake.waitForRequest(1, 50)).rejects.toThrow(
      /request #1 did not arrive within 50 ms; requests so far: #0 POST \/v1\/chat\/completions \(text\)/,
    );
    await expect(fake.waitForClientClose(0, 50)).rejects.toThrow(/closed only after its response finished/);
  });

  it('closes with a hung request still open, without blaming the client', async () => {
    const own = await startFakeOpenAI();
    own.script(fakeReply.hang());
    const pending = fetch(`${own.url}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'm', messages: [] }),
    }).catch((error: unknown) => error);
    await own.waitForRequest(0, 2_000);

    await own.close();

    expect(await pending).toBeInstanceOf(Error);
    expect(own.requests[0]).toMatchObject({ reply: 'hang', closedByClient: false });
    await expect(own.waitForClientClose(0, 1_000)).rejects.toThrow(/closed while waiting/);
  });
});
