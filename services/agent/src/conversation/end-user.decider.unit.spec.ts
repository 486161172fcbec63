import { ValidationError } from '@keel/core';
import { DeciderSpec } from '@keel/core/testing';
import type { ConversationEvent } from '@keel/events';
import { describe, expect, it } from 'vitest';
import type { ConversationCommand } from './conversation.commands.js';
import { conversationDecider } from './conversation.decider.js';
import { checkContext, contextOf, endUserOf } from './message-context.js';

const at = '2026-11-21T10:00:00.000Z';
const agent = { agentId: 'site', model: 'openai:gpt-4o-mini', maxSteps: 3 };
const spec = DeciderSpec.for(conversationDecider);
const user = { id: 'ana', role: 'owner' };
const context = { page: 'home' };

const created: ConversationEvent = {
  type: 'ConversationCreated',
  data: { conversationId: 'c1', agentId: 'site', createdAt: at, metadata: { siteName: 'Acme' } },
};
const submit = (turnId: string, ifBusy: 'reject' | 'enqueue' = 'reject'): ConversationCommand => ({
  type: 'SubmitMessage',
  turnId,
  messageId: `m-${turnId}`,
  content: 'hello',
  ifBusy,
  agent,
  role: 'editor',
  by: 'ana',
  context,
  user,
  at,
});

describe('conversation decider: the end user', () => {
  it('records the context on the message and the end user on the turn (queued ones too)', () => {
    spec
      .given([created])
      .when(submit('t1'))
      .then([
        {
          type: 'UserMessageAdded',
          data: { messageId: 'm-t1', turnId: 't1', content: 'hello', at, context },
        },
        { type: 'TurnStarted', data: { turnId: 't1', agent, role: 'editor', at, user } },
      ]);
    const started: ConversationEvent = {
      type: 'TurnStarted',
      data: { turnId: 't1', agent, role: 'editor', at, user },
    };
    spec
      .given([created, started])
      .when(submit('t2', 'enqueue'))
      .then([
        {
          type: 'UserMessageAdded',
          data: { messageId: 'm-t2', turnId: 't2', content: 'hello', at, context },
        },
        { type: 'TurnQueued', data: { turnId: 't2', messageId: 'm-t2', agent, role: 'editor', at, user } },
      ]);
  });

  it("sends the turn's end user and the conversation's metadata with each requested tool call", () => {
    const started: ConversationEvent = {
      type: 'TurnStarted',
      data: { turnId: 't1', agent, role: 'editor', at, user },
    };
    const events = conversationDecider.decide(
      {
        type: 'RecordModelOutput',
        turnId: 't1',
        step: 1,
        messageId: 'a1',
        text: '',
        toolCalls: [
          { toolCallId: 'k1', name: 'lookup', args: {}, verdict: { kind: 'allow', approval: 'never' } },
        ],
        usage: {
          model: 'gpt-4o-mini',
          promptTokens: 1,
          completionTokens: 1,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          costUsd: 0,
        },
        approvalIds: {},
        at,
      },
      [created, started].reduce(conversationDecider.evolve, conversationDecider.initialState()),
    );
    expect(events.find((e) => e.type === 'ToolCallRequested')?.data).toMatchObject({
      toolCallId: 'k1',
      user,
      metadata: { siteName: 'Acme' },
    });
  });
});

describe('message context and end user at the edge', () => {
  it('reads a JSON object of at most 32 KiB, naming context otherwise', () => {
    expect(contextOf('')).toBeUndefined();
    expect(contextOf('{"page":"home"}')).toEqual({ page: 'home' });
    for (const bad of ['[1]', 'null', '{', JSON.stringify({ x: 'y'.repeat(33 * 1024) })]) {
      expect(() => contextOf(bad)).toThrow(ValidationError);
    }
  });

  it("checks the context against the agent's schema, naming the failing field", () => {
    const schema = { type: 'object', properties: { page: { type: 'string' } }, required: ['page'] };
    expect(() => checkContext({ page: 'home' }, schema)).not.toThrow();
    expect(() => checkContext({ page: 5 }, undefined)).not.toThrow();
    try {
      checkContext({ page: 5 }, schema);
      expect.unreachable();
    } catch (error) {
      expect((error as ValidationError).details).toMatchObject({ field: 'context.page' });
    }
  });

  it('takes the acting user and a role word; a malformed role names the header', () => {
    expect(endUserOf('ana', '')).toEqual({ id: 'ana' });
    expect(endUserOf('ana', 'owner')).toEqual({ id: 'ana', role: 'owner' });
    expect(() => endUserOf('ana', 'two words')).toThrow(/X-Keel-User-Role/);
  });
});
