import { Decision } from '@keel/proto/keel/conversations/v1/conversations';
import { describe, expect, it } from 'vitest';
import { turnEventOf } from './turn-events.js';

describe('turnEventOf', () => {
  it('keeps the frame id and name and sets the payload named by the event', () => {
    expect(turnEventOf({ id: '4', event: 'turn.started', data: { turnId: 't1' } })).toEqual({
      id: '4',
      event: 'turn.started',
      turnStarted: { turnId: 't1' },
    });
    expect(turnEventOf({ id: '4.2', event: 'message.delta', data: { turnId: 't1', text: 'Hel' } })).toEqual({
      id: '4.2',
      event: 'message.delta',
      messageDelta: { turnId: 't1', text: 'Hel' },
    });
  });

  it('carries JSON values as JSON text and decisions as the enum', () => {
    const call = turnEventOf({
      id: '5',
      event: 'approval.required',
      data: {
        turnId: 't1',
        approvalId: 'ap1',
        toolCallId: 'c1',
        name: 'refund',
        args: { id: 'o-1', amount: 3 },
      },
    });
    expect(JSON.parse(call?.approvalRequired?.argsJson ?? '')).toEqual({ id: 'o-1', amount: 3 });
    expect(call?.approvalRequired?.conversationId).toBeUndefined();
    // A sub-agent's call, and a child's approval shown in the parent's stream.
    const delegated = turnEventOf({
      id: '5',
      event: 'tool.call',
      data: {
        turnId: 't1',
        toolCallId: 'c2',
        name: 'agent__r',
        args: { task: 'x' },
        childConversationId: 'k1',
      },
    });
    expect(delegated?.toolCall?.childConversationId).toBe('k1');
    const childApproval = turnEventOf({
      id: '6',
      event: 'approval.required',
      data: {
        turnId: 't1',
        conversationId: 'k1',
        approvalId: 'ap2',
        toolCallId: 'c3',
        name: 'refund',
        args: {},
      },
    });
    expect(childApproval?.approvalRequired?.conversationId).toBe('k1');
    expect(
      turnEventOf({
        id: '6',
        event: 'approval.decided',
        data: { approvalId: 'ap1', decision: 'deny', by: 'u' },
      })?.approvalDecided,
    ).toEqual({ approvalId: 'ap1', decision: Decision.DENY, by: 'u' });
    const result = turnEventOf({
      id: '7',
      event: 'tool.result',
      data: {
        turnId: 't1',
        toolCallId: 'c1',
        name: 'refund',
        ok: false,
        error: { code: 'denied', message: 'denied by u' },
      },
    });
    expect(result?.toolResult).toEqual({
      turnId: 't1',
      toolCallId: 'c1',
      name: 'refund',
      ok: false,
      error: 'denied by u',
    });
  });

  it('leaves out a cost the model has no price for, and skips names the API does not list', () => {
    const usage = turnEventOf({
      id: '8',
      event: 'usage',
      data: {
        turnId: 't1',
        model: 'openai:x',
        promptTokens: 3,
        completionTokens: 2,
        cacheReadTokens: 0,
        costUsd: null,
      },
    });
    expect(usage?.usage).toEqual({
      turnId: 't1',
      model: 'openai:x',
      promptTokens: 3,
      completionTokens: 2,
      cacheReadTokens: 0,
    });
    expect(turnEventOf({ id: '9', event: 'phase.changed', data: {} })).toBeUndefined();
  });
});
