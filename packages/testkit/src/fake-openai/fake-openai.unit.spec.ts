import {
  AIMessage,
  type AIMessageChunk,
  HumanMessage,
  SystemMessage,
  ToolMessage,
} from '@langchain/core/messages';
import { ChatOpenAI, type ChatOpenAIFields } from '@langchain/openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAI } from './fake-openai.js';
import { fakeReply, systemPromptIncludes } from './script.js';

const weatherTool = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
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

function chatModel(fields: ChatOpenAIFields = {}): ChatOpenAI {
  return new ChatOpenAI({
    model: 'gpt-4o-mini',
    apiKey: 'test-key',
    configuration: { baseURL: fake.url },
    streaming: true,
    streamUsage: true,
    maxRetries: 0,
    ...fields,
  });
}

async function collect(stream: AsyncIterable<AIMessageChunk>) {
  const chunks: AIMessageChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  const first = chunks[0];
  if (!first) throw new Error('the stream yielded nothing');
  return { chunks, full: chunks.slice(1).reduce((sum, chunk) => sum.concat(chunk), first) };
}

describe('fake OpenAI server driven by the real @langchain/openai client', () => {
  it('streams text in chunks that concatenate to the scripted answer, with usage', async () => {
    fake.script(fakeReply.text('Hello from the fake model.', { chunkSize: 5, usage: { promptTokens: 11 } }));

    const { chunks, full } = await collect(await chatModel().stream([new HumanMessage('hi')]));

    expect(chunks.filter((chunk) => chunk.text !== '').map((chunk) => chunk.text)).toEqual([
      'Hello',
      ' from',
      ' the ',
      'fake ',
      'model',
      '.',
    ]);
    expect(full.text).toBe('Hello from the fake model.');
    expect(full.usage_metadata).toMatchObject({ input_tokens: 11, output_tokens: 7 });
    const [request] = fake.requests;
    expect(request?.body).toMatchObject({
      model: 'gpt-4o-mini',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(request?.authorization).toEqual({ present: true, last4: '-key' });
    expect(JSON.stringify(request?.headers)).not.toContain('test-key');
    expect(request?.closedByClient).toBe(false);
  });

  it('streams several tool calls whose fragmented arguments aggregate into parsed tool_calls', async () => {
    fake.script(
      fakeReply.toolCalls(
        [
          { id: 'call_paris', name: 'get_weather', arguments: { city: 'Paris' } },
          { id: 'call_oslo', name: 'get_weather', arguments: { city: 'Oslo' } },
        ],
        { argumentsChunkSize: 4, usage: { promptTokens: 120, completionTokens: 30, cachedTokens: 100 } },
      ),
    );
    const model = chatModel().bindTools([weatherTool]);

    const { chunks, full } = await collect(
      await model.stream([new HumanMessage('weather in Paris and Oslo?')]),
    );

    expect(chunks.flatMap((chunk) => chunk.tool_call_chunks ?? []).length).toBeGreaterThan(6);
    expect(full.tool_calls).toEqual([
      { id: 'call_paris', name: 'get_weather', args: { city: 'Paris' }, type: 'tool_call' },
      { id: 'call_oslo', name: 'get_weather', args: { city: 'Oslo' }, type: 'tool_call' },
    ]);
    expect(full.response_metadata['finish_reason']).toBe('tool_calls');
    expect(full.usage_metadata).toMatchObject({
      input_tokens: 120,
      output_tokens: 30,
      total_tokens: 150,
      input_token_details: { cache_read: 100 },
    });
    expect(fake.requests[0]?.body?.tools).toEqual([
      expect.objectContaining({
        type: 'function',
        function: expect.objectContaining({ name: 'get_weather' }),
      }),
    ]);
  });

  it('answers a non-streaming invoke with the JSON form', async () => {
    fake.script(
      fakeReply.text('plain answer', { usage: { promptTokens: 9, completionTokens: 2, cachedTokens: 4 } }),
      fakeReply.toolCall('get_weather', '{"city":"Rome"}', { id: 'call_rome' }),
    );
    const model = chatModel({ streaming: false });

    const answer = await model.invoke([new HumanMessage('say something')]);
    const toolAnswer = await model.bindTools([weatherTool]).invoke([new HumanMessage('weather in Rome?')]);

    expect(answer.content).toBe('plain answer');
    expect(answer.usage_metadata).toMatchObject({
      input_tokens: 9,
      output_tokens: 2,
      total_tokens: 11,
      input_token_details: { cache_read: 4 },
    });
    expect(toolAnswer.tool_calls).toEqual([
      { id: 'call_rome', name: 'get_weather', args: { city: 'Rome' }, type: 'tool_call' },
    ]);
    expect(fake.requests.map((request) => request.body?.stream)).toEqual([false, false]);
  });

  it('runs a two-step tool loop and records the tool result the model was sent', async () => {
    fake.script(
      fakeReply.toolCall('get_weather', { city: 'Paris' }, { id: 'call_weather_1' }),
      fakeReply.text('It is sunny in Paris.'),
    );
    const model = chatModel().bindTools([weatherTool]);
    const conversation = [new SystemMessage('You are terse.'), new HumanMessage('Weather in Paris?')];

    const { full: step1 } = await collect(await model.stream(conversation));
    const call = step1.tool_calls?.[0];
    expect(call).toMatchObject({ id: 'call_weather_1', name: 'get_weather', args: { city: 'Paris' } });
    const asked = new AIMessage({ content: step1.content, tool_calls: step1.tool_calls ?? [] });
    const result = new ToolMessage({ tool_call_id: call?.id ?? '', content: '{"sky":"sunny"}' });
    const { full: step2 } = await collect(await model.stream([...conversation, asked, result]));

    expect(step2.text).toBe('It is sunny in Paris.');
    const sent = fake.requests[1]?.body?.messages;
    expect(sent?.map((message) => message.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(sent?.[2]?.tool_calls).toEqual([
      {
        id: 'call_weather_1',
        type: 'function',
        function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
      },
    ]);
    expect(sent?.[3]).toMatchObject({
      role: 'tool',
      tool_call_id: 'call_weather_1',
      content: '{"sky":"sunny"}',
    });
    expect(fake.pendingReplies()).toBe(0);
  });

  it('gives each conversation its own replies when keyed by a marker in the system prompt', async () => {
    fake.on(systemPromptIncludes('tenant-a'), 'answer for A', 'second answer for A');
    fake.on(systemPromptIncludes('tenant-b'), fakeReply.text('answer for B', { chunkDelayMs: 5 }));
    // invoke() on a `streaming: true` ChatOpenAI downloads a tiktoken encoding to estimate usage: offline it hangs.
    const model = chatModel({ streaming: false });
    const ask = (tenant: string) =>
      model.invoke([new SystemMessage(`tenant-${tenant}`), new HumanMessage('hi')]);

    const [b, a] = await Promise.all([ask('b'), ask('a')]);

    expect([a.text, b.text]).toEqual(['answer for A', 'answer for B']);
    expect(fake.pendingReplies()).toBe(1);
  });

  it('sees the connection closed when the client aborts a request the fake never answers', async () => {
    fake.script(fakeReply.hang());
    const controller = new AbortController();

    const streaming = (async () => {
      const stream = await chatModel().stream([new HumanMessage('hang please')], {
        signal: controller.signal,
      });
      for await (const _chunk of stream) {
        // drain
      }
    })();
    await fake.waitForRequest(0, 2_000);
    controller.abort();

    await expect(streaming).rejects.toThrow(/abort/i);
    const request = await fake.waitForClientClose(0, 2_000);
    expect(request.closedByClient).toBe(true);
    expect(request.reply).toBe('hang');
  });

  it('sees the connection closed when the client aborts a stream that stalled', async () => {
    fake.script(fakeReply.text('partial answer that never ends', { chunkSize: 4, stallAfterChunks: 3 }));
    const controller = new AbortController();
    const received: string[] = [];

    const streaming = (async () => {
      const stream = await chatModel().stream([new HumanMessage('stall please')], {
        signal: controller.signal,
      });
      for await (const chunk of stream) {
        received.push(chunk.text);
        if (received.join('') === 'partial ') controller.abort();
      }
    })();

    await expect(streaming).rejects.toThrow(/abort/i);
    expect(received.join('')).toBe('partial ');
    expect((await fake.waitForClientClose(0, 2_000)).closedByClient).toBe(true);
  });

  it('surfaces a scripted 500 as an error in the client', async () => {
    fake.script(fakeReply.error(500, 'the upstream model exploded'));

    const failure = chatModel().invoke([new HumanMessage('hi')]);

    await expect(failure).rejects.toThrow(/the upstream model exploded/);
    await expect(failure).rejects.toMatchObject({ status: 500 });
  });

  it('fails an unscripted request at once with a message naming it', async () => {
    const failure = chatModel().invoke([new HumanMessage('nobody scripted me')]);

    await expect(failure).rejects.toThrow(
      /no scripted reply for request #0 POST \/v1\/chat\/completions .*"nobody scripted me"/,
    );
    expect(fake.requests.map((request) => [request.reply, request.status])).toEqual([['unscripted', 500]]);
  });
});
