// A client request (its Idempotency-Key) recorded in the conversation's log: a retry gets the
// first outcome and appends nothing, whichever instance decides it and from whatever state
// (rebuilt from the start, or from a snapshot plus newer events).
import { DeciderSpec } from '@keel/core/testing';
import type { AcceptedRequest, ConversationEvent } from '@keel/events';
import { describe, expect, it } from 'vitest';
import type { ConversationCommand } from './conversation.commands.js';
import { ConversationConflictError, conversationDecider, decide } from './conversation.decider.js';
import type { Conversation } from './conversation.state.js';
import { acceptedRequest, evolve, initialConversation } from './conversation.state.js';

const at = '2026-11-21T10:00:00.000Z';
const agent = { agentId: 'support', model: 'openai:gpt-4o-mini', maxSteps: 3 };
const spec = DeciderSpec.for(conversationDecider);
const key = (name: string, hash = 'h1'): AcceptedRequest => ({ key: `k-${name}`, hash });

const create = (request?: AcceptedRequest): ConversationCommand => ({
  type: 'CreateConversation',
  conversationId: 'c1',
  agentId: 'support',
  ...(request ? { request } : {}),
  at,
});
const submit = (turnId: string, request?: AcceptedRequest, content = 'hi'): ConversationCommand => ({
  type: 'SubmitMessage',
  turnId,
  messageId: `m-${turnId}`,
  content,
  ifBusy: 'enqueue',
  agent,
  role: 'editor',
  by: 'ana',
  ...(request ? { request } : {}),
  at,
});
const askApproval = (turnId: string): ConversationCommand => ({
  type: 'RecordModelOutput',
  turnId,
  step: 1,
  messageId: `a-${turnId}`,
  text: '',
  toolCalls: [
    { toolCallId: 'x', name: 'refund', args: { id: 'o1' }, verdict: { kind: 'allow', approval: 'always' } },
  ],
  usage: {
    model: 'gpt-4o-mini',
    promptTokens: 1,
    completionTokens: 1,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    costUsd: 0,
  },
  approvalIds: { x: 'ap1' },
  at,
});
const approve = (
  request?: AcceptedRequest,
  decision: 'approve' | 'deny' = 'approve',
): ConversationCommand => ({
  type: 'DecideApproval',
  approvalId: 'ap1',
  decision,
  by: 'ana',
  ...(request ? { request } : {}),
  at,
});
const cancel = (request?: AcceptedRequest): ConversationCommand => ({
  type: 'CancelTurn',
  by: 'ana',
  ...(request ? { request } : {}),
  at,
});

/** The events the commands append one after the other (as the command handler would). */
const play = (commands: ConversationCommand[], from: ConversationEvent[] = []): ConversationEvent[] => {
  const events = [...from];
  let state = events.reduce(evolve, initialConversation());
  for (const command of commands) {
    const decided = decide(command, state);
    state = decided.reduce(evolve, state);
    events.push(...decided);
  }
  return events;
};
const fold = (events: ConversationEvent[], state: Conversation = initialConversation()) =>
  events.reduce(evolve, state);

describe('a retried client request', () => {
  it('a message sent again with its key appends nothing and has the first turn and version', () => {
    const log = play([create(), submit('t1', key('m1'))]);
    expect(log.map((e) => e.type)).toEqual(['ConversationCreated', 'UserMessageAdded', 'TurnStarted']);
    expect(log[1]!.data).toMatchObject({ request: key('m1') });
    // The retry carries a new turn id (ids are made per call): the log answers with the first.
    spec
      .given(log)
      .when(submit('t2', key('m1')))
      .then([]);
    expect(acceptedRequest(fold(log), 'k-m1')).toEqual({
      kind: 'message',
      hash: 'h1',
      turnId: 't1',
      version: 1,
    });
    // Also after the turn ran on and other messages came (the key is kept, not only the latest).
    const later = play([askApproval('t1'), submit('t3', key('m3'), 'more')], log);
    spec
      .given(later)
      .when(submit('t9', key('m1')))
      .then([]);
    expect(acceptedRequest(fold(later), 'k-m1')).toMatchObject({ turnId: 't1', version: 1 });
    expect(acceptedRequest(fold(later), 'k-m3')).toMatchObject({ turnId: 't3' });
  });

  it('the same key with another request is a conflict naming Idempotency-Key; no key is no check', () => {
    const log = play([create(), submit('t1', key('m1'))]);
    spec
      .given(log)
      .when(submit('t2', key('m1', 'another body'), 'something else'))
      .thenThrows(ConversationConflictError, /Idempotency-Key/);
    // A key used for a message, sent with a cancel: another operation, a conflict too.
    spec
      .given(log)
      .when(cancel(key('m1')))
      .thenThrows(ConversationConflictError, /Idempotency-Key/);
    // Without a key every message is a new one (the same text twice is two messages).
    expect(decide(submit('t2', undefined), fold(log)).map((e) => e.type)).toEqual([
      'UserMessageAdded',
      'TurnQueued',
    ]);
    expect(() => decide(submit('t2', key('m1', 'h2')), fold(log))).toThrow(
      expect.objectContaining({ details: expect.objectContaining({ field: 'Idempotency-Key' }) }),
    );
  });

  it('an approval decided again with its key answers as the first time; without it: 409', () => {
    const waiting = play([create(), submit('t1'), askApproval('t1')]);
    const decided = play([approve(key('a1'))], waiting);
    expect(decided.at(-1)).toMatchObject({ type: 'ApprovalDecided', data: { request: key('a1') } });
    spec
      .given(decided)
      .when(approve(key('a1')))
      .then([]);
    expect(acceptedRequest(fold(decided), 'k-a1')).toEqual({
      kind: 'approval',
      hash: 'h1',
      approvalId: 'ap1',
      decision: 'approve',
    });
    spec
      .given(decided)
      .when(approve())
      .thenThrows(ConversationConflictError, /already decided/);
    spec
      .given(decided)
      .when(approve(key('a2')))
      .thenThrows(ConversationConflictError, /already decided/);
    spec
      .given(decided)
      .when(approve(key('a1', 'deny instead'), 'deny'))
      .thenThrows(ConversationConflictError, /Idempotency-Key/);
  });

  it('a cancel sent again with its key cancels nothing more and names the turn it cancelled', () => {
    const cancelled = play([create(), submit('t1'), cancel(key('c1'))]);
    expect(cancelled.at(-1)).toMatchObject({
      type: 'TurnCancelled',
      data: { turnId: 't1', request: key('c1') },
    });
    // No turn runs now: without its key the cancel is refused, with it the first answer stands.
    spec
      .given(cancelled)
      .when(cancel(key('c1')))
      .then([]);
    spec
      .given(cancelled)
      .when(cancel())
      .thenThrows(ConversationConflictError, /no turn/);
    // A new turn started meanwhile: the retry still cancels nothing (it asked for one cancel).
    const again = play([submit('t2')], cancelled);
    spec
      .given(again)
      .when(cancel(key('c1')))
      .then([]);
    expect(acceptedRequest(fold(again), 'k-c1')).toEqual({ kind: 'cancel', hash: 'h1', turnId: 't1' });
  });

  it('a create sent again with its key creates nothing; another request with it conflicts', () => {
    const log = play([create(key('new'))]);
    expect(log[0]!.data).toMatchObject({ request: key('new') });
    spec
      .given(log)
      .when(create(key('new')))
      .then([]);
    spec
      .given(log)
      .when(create(key('new', 'h2')))
      .thenThrows(ConversationConflictError, /Idempotency-Key/);
    spec
      .given(log)
      .when(create())
      .thenThrows(ConversationConflictError, /already exists/);
  });

  it('a snapshot (the state as JSON) plus newer events answers as the whole log does', () => {
    const log = play([
      create(key('new')),
      submit('t1', key('m1')),
      askApproval('t1'),
      approve(key('a1')),
      submit('t2', key('m2'), 'then this'),
    ]);
    for (let cut = 0; cut <= log.length; cut++) {
      const snapshot = JSON.parse(JSON.stringify(fold(log.slice(0, cut)))) as Conversation;
      const restored = fold(log.slice(cut), snapshot);
      expect(restored).toEqual(fold(log));
      expect(restored.version).toBe(log.length);
      for (const retry of [
        create(key('new')),
        submit('t7', key('m1')),
        approve(key('a1')),
        submit('t8', key('m2'), 'then this'),
      ]) {
        expect(decide(retry, restored)).toEqual([]);
      }
      expect(() => decide(submit('t9', key('m2', 'h9'), 'other'), restored)).toThrow(
        ConversationConflictError,
      );
    }
  });

  it('events recorded before requests were (no `request`) fold as before and accept every retry anew', () => {
    const old = play([create(), submit('t1')]);
    const state = fold(old);
    expect(state.requests).toEqual({});
    expect(state.version).toBe(3);
    expect(decide(submit('t2', key('m1')), state).map((e) => e.type)).toEqual([
      'UserMessageAdded',
      'TurnQueued',
    ]);
  });
});
