// The intent a message was classified as rides on its turn's TurnStarted (API `turn.started`'s
// intent and confidence), also when the turn waited in the queue first.
import type { ConversationEvent } from '@keel/events';
import { describe, expect, it } from 'vitest';
import type { ConversationCommand } from './conversation.commands.js';
import { decide } from './conversation.decider.js';
import { evolve, initialConversation } from './conversation.state.js';

const at = '2026-11-24T04:00:00.000Z';
const agent = { agentId: 'router', model: 'openai:gpt-4o-mini', maxSteps: 3 };
const rebuild = (events: ConversationEvent[]) => events.reduce(evolve, initialConversation());
const created: ConversationEvent = {
  type: 'ConversationCreated',
  data: { conversationId: 'c1', agentId: 'router', createdAt: at },
};
const submit = (turnId: string, extra: Partial<ConversationCommand> = {}): ConversationCommand =>
  ({
    type: 'SubmitMessage',
    turnId,
    messageId: `m-${turnId}`,
    content: 'show the page',
    ifBusy: 'enqueue',
    agent,
    role: 'editor',
    by: 'ana',
    at,
    ...extra,
  }) as ConversationCommand;
const startedOf = (events: ConversationEvent[]) => events.find((e) => e.type === 'TurnStarted')?.data;

describe('turn intent', () => {
  it('TurnStarted carries the classified intent and confidence; none without a match', () => {
    const classified = { intent: 'read_content', confidence: 0.5 };
    expect(startedOf(decide(submit('t1', { classified }), rebuild([created])))).toMatchObject(classified);
    const plain = startedOf(decide(submit('t1'), rebuild([created])));
    expect(plain).toBeDefined();
    expect(plain).not.toHaveProperty('intent');
    expect(plain).not.toHaveProperty('confidence');
  });

  it('a queued turn starts with the intent its message was classified as', () => {
    const running = [created, ...decide(submit('t1'), rebuild([created]))];
    const classified = { intent: 'edit_content', confidence: 1 };
    const queued = [...running, ...decide(submit('t2', { classified }), rebuild(running))];
    expect(queued.at(-1)).toMatchObject({ type: 'TurnQueued', data: classified });
    const done = decide(
      {
        type: 'RecordModelOutput',
        turnId: 't1',
        step: 1,
        messageId: 'a1',
        text: 'done',
        toolCalls: [],
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
      rebuild(queued),
    );
    expect(startedOf(done)).toMatchObject({ turnId: 't2', ...classified });
  });
});
