import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EgressPolicy } from '@keel/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createModelStep } from './langchain-model-step.js';

/**
 * Anthropic streams content as blocks (`[{ type: 'text', text }]`, `input_json_delta` for tool
 * arguments), not as strings like OpenAI: one scripted Messages API stream on loopback checks the
 * step reads both.
 */
const EVENTS = [
  {
    type: 'message_start',
    message: {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-test-1',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: 50,
        output_tokens: 1,
        cache_read_input_tokens: 40,
        cache_creation_input_tokens: 5,
      },
    },
  },
  { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Checking ' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'the weather.' } },
  { type: 'content_block_stop', index: 0 },
  {
    type: 'content_block_start',
    index: 1,
    content_block: { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} },
  },
  { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"city":' } },
  { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: ' "Paris"}' } },
  { type: 'content_block_stop', index: 1 },
  {
    type: 'message_delta',
    delta: { stop_reason: 'tool_use', stop_sequence: null },
    usage: { output_tokens: 20 },
  },
  { type: 'message_stop' },
];

let server: Server;
let baseUrl: string;
const bodies: unknown[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
    req.on('end', () => {
      bodies.push(JSON.parse(raw));
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const event of EVENTS) res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('createModelStep on Anthropic (content blocks)', () => {
  it('streams the text blocks as deltas and returns the tool_use block as a tool call with cache usage', async () => {
    const deltas: string[] = [];

    // The scripted server is the tenant's endpoint on loopback: opened on purpose.
    const egress = EgressPolicy.fromAllowList('127.0.0.0/8');
    const output = await createModelStep({ env: {}, maxRetries: 0, egress })({
      model: 'anthropic:claude-test',
      credentials: { apiKey: 'sk-ant-test', baseUrl },
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Weather in Paris?' },
      ],
      tools: [
        {
          name: 'get_weather',
          description: 'Current weather',
          inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
        },
      ],
      temperature: 0,
      signal: new AbortController().signal,
      onDelta: (text) => deltas.push(text),
    });

    expect(deltas).toEqual(['Checking ', 'the weather.']);
    expect(output.text).toBe('Checking the weather.');
    expect(output.toolCalls).toEqual([
      { toolCallId: 'toolu_1', name: 'get_weather', args: { city: 'Paris' } },
    ]);
    expect(output.usage).toEqual({
      promptTokens: 95,
      completionTokens: 21,
      cacheReadTokens: 40,
      cacheWriteTokens: 5,
    });
    expect(output.model).toBe('anthropic:claude-test-1');
    expect(bodies[0]).toMatchObject({
      model: 'claude-test',
      system: expect.anything(),
      tools: [{ name: 'get_weather', input_schema: { type: 'object' } }],
      stream: true,
    });
  });

  it('sends extended thinking without a temperature, max_tokens above the budget when the default is not', async () => {
    const egress = EgressPolicy.fromAllowList('127.0.0.0/8');
    const step = createModelStep({ env: {}, maxRetries: 0, egress });
    const call = (thinkingBudgetTokens: number) =>
      step({
        model: 'anthropic:claude-sonnet-4-5',
        credentials: { apiKey: 'sk-ant-test', baseUrl },
        messages: [{ role: 'user', content: 'Think.' }],
        tools: [],
        temperature: 0,
        providerOptions: { thinkingBudgetTokens },
        signal: new AbortController().signal,
        onDelta: () => {},
      });
    bodies.length = 0;
    await call(20_000);
    await call(2_048);
    expect(bodies[0]).toMatchObject({
      thinking: { type: 'enabled', budget_tokens: 20_000 },
      max_tokens: 24_096,
    });
    // LangChain's default for the model (16,384) is above this budget: left as it is.
    expect(bodies[1]).toMatchObject({
      thinking: { type: 'enabled', budget_tokens: 2_048 },
      max_tokens: 16_384,
    });
    for (const body of bodies) {
      expect(body).not.toHaveProperty('temperature');
      expect(body).not.toHaveProperty('top_p');
    }
  });
});
