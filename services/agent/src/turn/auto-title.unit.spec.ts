import type { RecordedEvent } from '@keel/core';
import type { AgentDefinition } from '@keel/events';
import { describe, expect, it } from 'vitest';
import type { Conversation } from '../conversation/conversation.state.js';
import { initialConversation } from '../conversation/conversation.state.js';
import { TITLE_INSTRUCTION, autoTitleCommand, titleDue, titleOf, titlePrompt } from './auto-title.js';

const at = '2026-11-24T10:00:00.000Z';
const event = (type: string): RecordedEvent => ({
  eventId: 'e1',
  type,
  data: { turnId: 't1', finishReason: 'stop', at },
  metadata: {},
  tenantId: 'acme',
  streamName: 'conversation-c1',
  version: 5,
  commitId: 'c1',
  recordedAt: at,
});
const state: Conversation = {
  ...initialConversation(),
  id: 'c1',
  agentId: 'chat',
  status: 'idle',
  messages: [
    { id: 'm1', role: 'user', content: 'Refund order 42' },
    { id: 'a1', role: 'assistant', content: 'Done.' },
    { id: 'tool-x', role: 'tool', content: '{"secret":1}', toolCallId: 'x' },
  ],
};
const agent = (autoTitle?: boolean) =>
  ({ agentId: 'chat', model: 'openai:gpt-4o-mini', options: { autoTitle } }) as unknown as AgentDefinition;

describe('auto title', () => {
  it('is due after a completed turn of an untitled conversation of an autoTitle agent, once', () => {
    expect(titleDue(event('TurnCompleted'), state, agent(true))).toBe(true);
    expect(titleDue(event('TurnFailed'), state, agent(true))).toBe(false);
    expect(titleDue(event('TurnCompleted'), state, agent(false))).toBe(false);
    expect(titleDue(event('TurnCompleted'), state, undefined)).toBe(false);
    expect(titleDue(event('TurnCompleted'), { ...state, title: 'Mine' }, agent(true))).toBe(false);
    expect(titleDue(event('TurnCompleted'), { ...state, autoTitledAfter: 't0' }, agent(true))).toBe(false);
  });

  it('asks with the instruction and the user and assistant text only', () => {
    expect(titlePrompt(state)).toEqual([
      { role: 'system', content: TITLE_INSTRUCTION },
      { role: 'user', content: 'user: Refund order 42\nassistant: Done.' },
    ]);
  });

  it('keeps one line of the answer without quotes or a final period, and records it with its usage', () => {
    expect(titleOf('"Refund for order 42."\nmore')).toBe('Refund for order 42');
    const command = autoTitleCommand({
      turnId: 't1',
      output: {
        text: ' Refund ',
        toolCalls: [],
        usage: { promptTokens: 30, completionTokens: 4, cacheReadTokens: 0, cacheWriteTokens: 0 },
        model: 'gpt-4o-mini',
        contextTokens: 30,
      },
      priced: { costUsd: 0.0001, windowTokens: 128_000 },
      at,
    });
    expect(command).toEqual({
      type: 'RecordAutoTitle',
      turnId: 't1',
      title: 'Refund',
      usage: {
        model: 'gpt-4o-mini',
        promptTokens: 30,
        completionTokens: 4,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        costUsd: 0.0001,
      },
      at,
    });
  });
});
