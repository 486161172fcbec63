import type { AgentDefinition, ConversationEvent } from '@keel/events';
import { describe, expect, it } from 'vitest';
import { evolve, initialConversation } from '../conversation/conversation.state.js';
import { promptMessages, systemPrompt, truncateForModel } from './prompt.js';

const agent: AgentDefinition = {
  agentId: 'support',
  model: 'openai:gpt-4o-mini',
  instructions: 'Answer in French.',
  tools: ['get_weather'],
  maxSteps: 8,
  temperature: 0,
  toolResultMaxChars: 20,
};
const tools = [{ name: 'get_weather', description: 'Weather for a city', inputSchema: { type: 'object' } }];
const at = '2026-11-21T10:00:00.000Z';

describe('prompt assembly', () => {
  it('puts the static sections first, identical across conversations, and the state last', () => {
    const a = systemPrompt(agent, tools, {});
    const b = systemPrompt(agent, tools, { phase: 'verified' });
    expect(b.startsWith(a)).toBe(true);
    expect(b.endsWith('# State\nCurrent phase: verified')).toBe(true);
    const order = ['# Role', '# Rules', '# Instructions', '# Tools', '# State'].map((h) => b.indexOf(h));
    expect(order).toEqual([...order].sort((x, y) => x - y));
    expect(a).toContain('- get_weather: Weather for a city');
    expect(a).toContain('Answer in French.');
  });

  it('sends the conversation in order, with tool calls and truncated tool results', () => {
    const events: ConversationEvent[] = [
      { type: 'ConversationCreated', data: { conversationId: 'c1', agentId: 'support', createdAt: at } },
      { type: 'UserMessageAdded', data: { messageId: 'm1', turnId: 't1', content: 'Weather in Paris?', at } },
      {
        type: 'TurnStarted',
        data: {
          turnId: 't1',
          agent: { agentId: 'support', model: 'openai:x', maxSteps: 8 },
          role: 'editor',
          at,
        },
      },
      {
        type: 'AssistantMessageCompleted',
        data: {
          turnId: 't1',
          step: 1,
          messageId: 'a1',
          text: '',
          toolCalls: [{ toolCallId: 'call_1', name: 'get_weather', args: { city: 'Paris' } }],
          at,
        },
      },
      {
        type: 'ToolCallRequested',
        data: {
          turnId: 't1',
          toolCallId: 'call_1',
          name: 'get_weather',
          args: { city: 'Paris' },
          approvalRequired: false,
          at,
        },
      },
      {
        type: 'ToolCallCompleted',
        data: {
          turnId: 't1',
          toolCallId: 'call_1',
          name: 'get_weather',
          ok: true,
          result: { forecast: 'sunny and warm all week long' },
          at,
        },
      },
    ];
    const conversation = events.reduce(evolve, initialConversation());
    const messages = promptMessages(agent, tools, conversation);
    expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(messages[2]).toEqual({
      role: 'assistant',
      content: '',
      toolCalls: [{ id: 'call_1', name: 'get_weather', args: { city: 'Paris' } }],
    });
    expect(messages[3]).toMatchObject({ role: 'tool', toolCallId: 'call_1' });
    expect((messages[3] as { content: string }).content).toMatch(
      /^\{"forecast":"sunny a… \[truncated: \d+ more characters not shown\]$/,
    );
    // The full result stays in the state (and the log).
    expect(conversation.messages[2]?.content).toBe('{"forecast":"sunny and warm all week long"}');
  });

  it("a message queued behind a running turn is not in that turn's next call, only in its own turn's", () => {
    const snapshot = { agentId: 'support', model: 'openai:x', maxSteps: 8 };
    const started = (turnId: string): ConversationEvent => ({
      type: 'TurnStarted',
      data: { turnId, agent: snapshot, role: 'editor', at },
    });
    const firstCall: ConversationEvent[] = [
      { type: 'ConversationCreated', data: { conversationId: 'c1', agentId: 'support', createdAt: at } },
      { type: 'UserMessageAdded', data: { messageId: 'm1', turnId: 't1', content: 'Weather in Paris?', at } },
      started('t1'),
      {
        type: 'AssistantMessageCompleted',
        data: {
          turnId: 't1',
          step: 1,
          messageId: 'a1',
          text: '',
          toolCalls: [{ toolCallId: 'call_1', name: 'get_weather', args: { city: 'Paris' } }],
          at,
        },
      },
      {
        type: 'ToolCallRequested',
        data: {
          turnId: 't1',
          toolCallId: 'call_1',
          name: 'get_weather',
          args: {},
          approvalRequired: false,
          at,
        },
      },
      // Sent with ifBusy: enqueue while the tool runs.
      { type: 'UserMessageAdded', data: { messageId: 'm2', turnId: 't2', content: 'And in Rome?', at } },
      { type: 'TurnQueued', data: { turnId: 't2', messageId: 'm2', agent: snapshot, role: 'editor', at } },
      {
        type: 'ToolCallCompleted',
        data: { turnId: 't1', toolCallId: 'call_1', name: 'get_weather', ok: true, result: 'sun', at },
      },
    ];
    const secondCall = promptMessages(agent, tools, firstCall.reduce(evolve, initialConversation()));
    expect(secondCall.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(secondCall.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['Weather in Paris?']);

    const queuedTurn: ConversationEvent[] = [
      ...firstCall,
      {
        type: 'AssistantMessageCompleted',
        data: { turnId: 't1', step: 2, messageId: 'a2', text: 'Sunny.', toolCalls: [], at },
      },
      { type: 'TurnCompleted', data: { turnId: 't1', finishReason: 'stop', at } },
      started('t2'),
    ];
    const queuedCall = promptMessages(agent, tools, queuedTurn.reduce(evolve, initialConversation()));
    expect(queuedCall.map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
      'user',
    ]);
    expect(queuedCall.at(-1)).toEqual({ role: 'user', content: 'And in Rome?' });
  });

  it('leaves short results alone', () => {
    expect(truncateForModel('ok', 10)).toBe('ok');
    expect(truncateForModel('x'.repeat(11), 10)).toBe(
      `${'x'.repeat(10)}… [truncated: 1 more characters not shown]`,
    );
  });
});
