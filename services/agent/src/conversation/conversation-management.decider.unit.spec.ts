import { NotFoundError, ValidationError, fold } from '@keel/core';
import { DeciderSpec } from '@keel/core/testing';
import type { ConversationEvent } from '@keel/events';
import { describe, expect, it } from 'vitest';
import type { ConversationCommand } from './conversation.commands.js';
import { conversationDecider } from './conversation.decider.js';
import { evolve, initialConversation } from './conversation.state.js';

const at = '2026-11-24T10:00:00.000Z';
const agent = { agentId: 'support', model: 'openai:gpt-4o-mini', maxSteps: 3 };
const spec = DeciderSpec.for(conversationDecider);
const usage = {
  model: 'gpt-4o-mini',
  promptTokens: 10,
  completionTokens: 5,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  costUsd: 0.001,
};

const created: ConversationEvent = {
  type: 'ConversationCreated',
  data: { conversationId: 'c1', agentId: 'support', createdAt: at, userId: 'ana', metadata: { site: 'a' } },
};
/** One finished turn: user message `m<n>`, answer `a<n>`. */
const turn = (n: number, extra: { replaceFrom?: string } = {}): ConversationEvent[] => [
  { type: 'UserMessageAdded', data: { messageId: `m${n}`, turnId: `t${n}`, content: `q${n}`, at, ...extra } },
  { type: 'TurnStarted', data: { turnId: `t${n}`, agent, role: 'editor', at, ...extra } },
  {
    type: 'AssistantMessageCompleted',
    data: { turnId: `t${n}`, step: 1, messageId: `a${n}`, text: `r${n}`, toolCalls: [], at },
  },
  { type: 'UsageRecorded', data: { turnId: `t${n}`, step: 1, ...usage, at } },
  { type: 'TurnCompleted', data: { turnId: `t${n}`, finishReason: 'stop', affected: [], at } },
];
const history = [created, ...turn(1), ...turn(2)];
const stateOf = (events: ConversationEvent[]) => fold(conversationDecider, events);

const submit = (
  replaceFrom: string,
  ifBusy: 'reject' | 'enqueue' | 'interrupt' = 'reject',
): ConversationCommand => ({
  type: 'SubmitMessage',
  turnId: 't3',
  messageId: 'm3',
  content: 'edited',
  ifBusy,
  agent,
  role: 'editor',
  by: 'ana',
  replaceFrom,
  at,
});

describe('conversation management: edit and regenerate (replaceFrom)', () => {
  it('starts a turn that replaces the message; the branch before it is all the model and GET see', () => {
    spec
      .given(history)
      .when(submit('m2'))
      .then([
        {
          type: 'UserMessageAdded',
          data: { messageId: 'm3', turnId: 't3', content: 'edited', at, replaceFrom: 'm2' },
        },
        { type: 'TurnStarted', data: { turnId: 't3', agent, role: 'editor', at, replaceFrom: 'm2' } },
      ]);
    const after = stateOf([...history, ...decideOn(history, submit('m2'))]);
    expect(after.messages.map((m) => m.id)).toEqual(['m1', 'a1', 'm3']);
  });

  it('regenerates from the first message: only the new message remains on the branch', () => {
    const after = stateOf([...history, ...decideOn(history, submit('m1'))]);
    expect(after.messages.map((m) => [m.id, m.content])).toEqual([['m3', 'edited']]);
  });

  it('refuses an unknown id, an assistant message, a message cut off the branch, naming replaceFrom', () => {
    const edited = [...history, ...turn(3, { replaceFrom: 'm1' })];
    for (const [events, id] of [
      [history, 'nope'],
      [history, 'a1'],
      [edited, 'm2'],
    ] as const) {
      spec
        .given([...events])
        .when(submit(id))
        .thenThrows(ValidationError, /replaceFrom/);
    }
  });

  it('refuses replaceFrom queued behind a running turn (enqueue), naming replaceFrom', () => {
    const running = [...history, turn(3)[0]!, turn(3)[1]!];
    spec
      .given(running)
      .when(submit('m1', 'enqueue'))
      .thenThrows(ValidationError, /replaceFrom/);
  });
});

describe('conversation management: PATCH', () => {
  const update = (fields: { title?: string; metadata?: Record<string, string> }): ConversationCommand => ({
    type: 'UpdateConversation',
    ...fields,
    by: 'ana',
    at,
  });

  it('records what changed: the title, the whole metadata map', () => {
    spec
      .given(history)
      .when(update({ title: 'Pricing', metadata: { site: 'b' } }))
      .then([
        { type: 'ConversationUpdated', data: { title: 'Pricing', metadata: { site: 'b' }, by: 'ana', at } },
      ]);
    spec
      .given(history)
      .when(update({ title: 'Pricing', metadata: { site: 'a' } }))
      .then([{ type: 'ConversationUpdated', data: { title: 'Pricing', by: 'ana', at } }]);
    const after = stateOf([
      ...history,
      { type: 'ConversationUpdated', data: { metadata: {}, by: 'ana', at } },
    ]);
    expect(after.metadata).toBeUndefined();
  });

  it('appends nothing when nothing changes', () => {
    spec
      .given(history)
      .when(update({ metadata: { site: 'a' } }))
      .then([]);
  });

  it('refuses nothing to change, a blank or long title, bad metadata, naming the field', () => {
    spec.given(history).when(update({})).thenThrows(ValidationError, /title/);
    spec
      .given(history)
      .when(update({ title: '  ' }))
      .thenThrows(ValidationError, /title/);
    spec
      .given(history)
      .when(update({ title: 'x'.repeat(201) }))
      .thenThrows(ValidationError, /title/);
    spec
      .given(history)
      .when(update({ metadata: { 'bad key': 'x' } }))
      .thenThrows(ValidationError, /metadata/);
    spec
      .given([])
      .when(update({ title: 'x' }))
      .thenThrows(NotFoundError);
  });
});

describe('conversation management: feedback', () => {
  const rate = (messageId: string, rating: 'up' | 'down'): ConversationCommand => ({
    type: 'GiveFeedback',
    messageId,
    rating,
    by: 'ana',
    at,
  });

  it('records a rating with the one it replaces and the agent; the latest is on the message', () => {
    const first: ConversationEvent = {
      type: 'FeedbackGiven',
      data: { messageId: 'a1', rating: 'up', agentId: 'support', by: 'ana', at },
    };
    spec.given(history).when(rate('a1', 'up')).then([first]);
    spec
      .given([...history, first])
      .when(rate('a1', 'down'))
      .then([
        {
          type: 'FeedbackGiven',
          data: { messageId: 'a1', rating: 'down', previous: 'up', agentId: 'support', by: 'ana', at },
        },
      ]);
    expect(stateOf([...history, first]).messages.find((m) => m.id === 'a1')?.feedback).toEqual({
      rating: 'up',
    });
  });

  it('refuses a message not on the branch: not found', () => {
    spec.given(history).when(rate('zz', 'up')).thenThrows(NotFoundError);
  });
});

describe('conversation management: auto title', () => {
  const title = (text = 'Pricing questions'): ConversationCommand => ({
    type: 'RecordAutoTitle',
    turnId: 't1',
    title: text,
    usage,
    at,
  });

  it('records the title and the call usage (step 0) once; a second recording appends nothing', () => {
    const recorded: ConversationEvent[] = [
      {
        type: 'ConversationUpdated',
        data: { title: 'Pricing questions', by: 'system:agent', auto: { turnId: 't1' }, at },
      },
      { type: 'UsageRecorded', data: { turnId: 't1', step: 0, ...usage, at } },
    ];
    spec.given(history).when(title()).then(recorded);
    spec
      .given([...history, ...recorded])
      .when(title('Other'))
      .then([]);
    const after = stateOf([...history, ...recorded]);
    expect(after.title).toBe('Pricing questions');
    expect(after.usage.promptTokens).toBe(30);
  });

  it('counts the call but keeps a title a person gave meanwhile', () => {
    const titled: ConversationEvent = { type: 'ConversationUpdated', data: { title: 'Mine', by: 'ana', at } };
    spec
      .given([...history, titled])
      .when(title())
      .then([{ type: 'UsageRecorded', data: { turnId: 't1', step: 0, ...usage, at } }]);
  });
});

const decideOn = (events: ConversationEvent[], command: ConversationCommand): ConversationEvent[] =>
  conversationDecider.decide(command, events.reduce(evolve, initialConversation()));
