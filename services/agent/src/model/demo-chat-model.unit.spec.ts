import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { describe, expect, it } from 'vitest';
import type { PromptMessage, PromptTool } from '../prompt/prompt.js';
import { DemoChatModel } from './demo-chat-model.js';
import { createModelStep } from './langchain-model-step.js';
import type { ModelStepInput } from './model-step.js';

const currentTime: PromptTool = {
  name: 'current_time',
  description: 'Current date and time in a time zone',
  inputSchema: { type: 'object', properties: { timezone: { type: 'string' } } },
};
const calculator: PromptTool = {
  name: 'calculator',
  description: 'Evaluates an arithmetic expression',
  inputSchema: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] },
};

/** One demo call through the real ModelStep, with no environment at all: the demo needs no key. */
async function ask(messages: PromptMessage[], overrides: Partial<ModelStepInput> = {}) {
  const deltas: string[] = [];
  const output = await createModelStep({ env: {} })({
    model: 'demo:keel-demo',
    credentials: {},
    messages: [{ role: 'system', content: 'You are an assistant running on Keel.' }, ...messages],
    tools: [currentTime, calculator],
    temperature: 0,
    signal: new AbortController().signal,
    onDelta: (text) => deltas.push(text),
    ...overrides,
  });
  return { output, deltas };
}

describe('the demo model through createModelStep', () => {
  it('calls current_time for a question about the time', async () => {
    const { output, deltas } = await ask([{ role: 'user', content: 'What time is it?' }]);

    expect(output.text).toBe('');
    expect(deltas).toEqual([]);
    expect(output.toolCalls).toEqual([
      { toolCallId: expect.stringMatching(/^demo_call_[0-9a-f]+$/), name: 'current_time', args: {} },
    ]);
    expect(output.model).toBe('demo:keel-demo');
  });

  it.each([
    ['Quelle heure est-il à Europe/Paris ?', 'Europe/Paris'],
    ['what is the time in Tokyo', 'Asia/Tokyo'],
    ['Clock check for New York please', 'America/New_York'],
  ])('passes the zone of %j to current_time', async (question, timezone) => {
    const { output } = await ask([{ role: 'user', content: question }]);
    expect(output.toolCalls).toEqual([
      { toolCallId: expect.any(String), name: 'current_time', args: { timezone } },
    ]);
  });

  it('calls calculator with the expression of an arithmetic question', async () => {
    const { output } = await ask([{ role: 'user', content: 'what is 2+3*4' }]);
    expect(output.toolCalls).toEqual([
      { toolCallId: expect.any(String), name: 'calculator', args: { expression: '2+3*4' } },
    ]);

    const spaced = await ask([{ role: 'user', content: 'How much is (17.5 + 2) * 3?' }]);
    expect(spaced.output.toolCalls[0]?.args).toEqual({ expression: '(17.5 + 2) * 3' });
  });

  it('calls a bound tool named with a JSON object, and only a bound one with valid JSON', async () => {
    const refund: PromptTool = {
      name: 'refund',
      description: 'Refunds an order',
      inputSchema: { type: 'object' },
    };
    const named = await ask([{ role: 'user', content: 'please refund {"order": "A-1", "amount": 20}' }], {
      tools: [currentTime, calculator, refund],
    });
    expect(named.output.toolCalls).toEqual([
      { toolCallId: expect.any(String), name: 'refund', args: { order: 'A-1', amount: 20 } },
    ]);

    const unbound = await ask([{ role: 'user', content: 'refund {"order": "A-1"}' }]);
    expect(unbound.output.toolCalls).toEqual([]);
    const notJson = await ask([{ role: 'user', content: 'refund {order A-1}' }], { tools: [refund] });
    expect(notJson.output.text).toBe('[demo] You said: refund {order A-1}');
  });

  it('answers with the tool result once the tool has run', async () => {
    const { output, deltas } = await ask([
      { role: 'user', content: 'what is 2+3*4' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'demo_call_1', name: 'calculator', args: { expression: '2+3*4' } }],
      },
      { role: 'tool', toolCallId: 'demo_call_1', content: '{"expression":"2+3*4","result":14}' },
    ]);

    expect(output.text).toBe('[demo] calculator says: {"expression":"2+3*4","result":14}');
    expect(output.toolCalls).toEqual([]);
    expect(deltas.join('')).toBe(output.text);
  });

  it('echoes anything else, streamed word by word', async () => {
    const { output, deltas } = await ask([{ role: 'user', content: 'Hello there, demo!' }]);

    expect(output.text).toBe('[demo] You said: Hello there, demo!');
    expect(deltas).toEqual(['[demo] ', 'You ', 'said: ', 'Hello ', 'there, ', 'demo!']);
    expect(output.toolCalls).toEqual([]);
  });

  it('does not call tools the agent does not have', async () => {
    const { output } = await ask([{ role: 'user', content: 'What time is it? And 2+2?' }], { tools: [] });
    expect(output.toolCalls).toEqual([]);
    expect(output.text).toBe('[demo] You said: What time is it? And 2+2?');
  });

  it('reports usage as a token per four characters', async () => {
    const system = 'You are an assistant running on Keel.';
    const { output } = await ask([{ role: 'user', content: 'Hello there, demo!' }]);

    expect(output.usage).toEqual({
      promptTokens: Math.ceil((system.length + 'Hello there, demo!'.length) / 4),
      completionTokens: Math.ceil(output.text.length / 4),
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
    });
    expect(output.contextTokens).toBe(output.usage.promptTokens);
  });

  it('is deterministic: the same conversation gets the same answer and the same tool call ids', async () => {
    const conversation: PromptMessage[] = [{ role: 'user', content: 'What time is it in London?' }];
    const first = await ask(conversation);
    const second = await ask(conversation);
    const later = await ask([
      ...conversation,
      { role: 'assistant', content: '[demo] current_time says: 12:00' },
      { role: 'user', content: 'What time is it in London?' },
    ]);

    expect(second.output).toEqual(first.output);
    expect(later.output.toolCalls[0]?.toolCallId).not.toBe(first.output.toolCalls[0]?.toolCallId);
  });

  it('rejects with an AbortError when aborted mid-answer', async () => {
    const controller = new AbortController();
    const deltas: string[] = [];
    const failure = createModelStep({ env: {}, demoWordDelayMs: 5 })({
      model: 'demo:keel-demo',
      credentials: {},
      messages: [{ role: 'user', content: 'one two three four five six' }],
      tools: [],
      temperature: 0,
      signal: controller.signal,
      onDelta: (text) => {
        deltas.push(text);
        if (deltas.length === 2) controller.abort();
      },
    });

    await expect(failure).rejects.toMatchObject({ name: 'AbortError' });
    expect(deltas).toEqual(['[demo] ', 'You ']);
  });

  it('refuses a demo model other than keel-demo', async () => {
    await expect(ask([{ role: 'user', content: 'hi' }], { model: 'demo:other' })).rejects.toThrow(
      /demo:keel-demo/,
    );
  });
});

describe('DemoChatModel as a LangChain chat model', () => {
  it('binds tools and answers invoke() with a tool call, then with the result', async () => {
    const model = new DemoChatModel().bindTools([
      { type: 'function', function: { name: 'current_time', description: 'now', parameters: {} } },
    ]);

    const asked = await model.invoke([new HumanMessage('what time is it in Paris?')]);
    const call = asked.tool_calls?.[0];
    expect(call).toMatchObject({ name: 'current_time', args: { timezone: 'Europe/Paris' } });

    const answered = await model.invoke([
      new HumanMessage('what time is it in Paris?'),
      new AIMessage({ content: '', tool_calls: asked.tool_calls ?? [] }),
      new ToolMessage({ tool_call_id: call?.id ?? '', content: '14:05 in Paris' }),
    ]);
    expect(answered.text).toBe('[demo] current_time says: 14:05 in Paris');
    expect(answered.usage_metadata?.output_tokens).toBe(Math.ceil(answered.text.length / 4));
  });

  it('without bound tools, echoes even a question about the time', async () => {
    const answer = await new DemoChatModel().invoke([new HumanMessage('what time is it?')]);
    expect(answer.tool_calls).toEqual([]);
    expect(answer.text).toBe('[demo] You said: what time is it?');
  });
});
