import { NotFoundError } from '@keel/core';
import { DeciderSpec } from '@keel/core/testing';
import type { ConversationEvent } from '@keel/events';
import { describe, expect, it } from 'vitest';
import type { ConversationCommand } from './conversation.commands.js';
import { ConversationConflictError, conversationDecider } from './conversation.decider.js';
import { evolve, initialConversation, pendingClientCalls } from './conversation.state.js';

// Client tools (API.md "The client in the loop"): the decider's half of a client call's life.
const at = '2026-11-21T10:00:00.000Z';
const deadline = '2026-11-21T10:00:02.000Z';
const later = '2026-11-21T10:00:01.000Z';
const late = '2026-11-21T10:00:05.000Z';
const agent = { agentId: 'editor-bot', model: 'openai:gpt-4o-mini', maxSteps: 3 };
const spec = DeciderSpec.for(conversationDecider);
const usage = {
  model: 'gpt-4o-mini',
  promptTokens: 10,
  completionTokens: 5,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  costUsd: 0.001,
};
const running: ConversationEvent[] = [
  { type: 'ConversationCreated', data: { conversationId: 'c1', agentId: 'editor-bot', createdAt: at } },
  { type: 'UserMessageAdded', data: { messageId: 'm1', turnId: 't1', content: 'read the page', at } },
  { type: 'TurnStarted', data: { turnId: 't1', agent, role: 'editor', at } },
];
const asked: ConversationEvent[] = [
  {
    type: 'AssistantMessageCompleted',
    data: {
      turnId: 't1',
      step: 1,
      messageId: 'a1',
      text: '',
      toolCalls: [{ toolCallId: 'k', name: 'read_page', args: { id: 'p1' } }],
      at,
    },
  },
  { type: 'UsageRecorded', data: { turnId: 't1', step: 1, ...usage, at } },
];
const modelAsks = (approval: 'never' | 'always'): ConversationCommand => ({
  type: 'RecordModelOutput',
  turnId: 't1',
  step: 1,
  messageId: 'a1',
  text: '',
  toolCalls: [
    {
      toolCallId: 'k',
      name: 'read_page',
      args: { id: 'p1' },
      verdict: { kind: 'allow', approval, client: { timeoutMs: 2_000 } },
    },
  ],
  usage,
  approvalIds: { k: 'ap-k' },
  at,
});
const requested = (approvalRequired: boolean): ConversationEvent => ({
  type: 'ToolCallRequested',
  data: {
    turnId: 't1',
    toolCallId: 'k',
    name: 'read_page',
    args: { id: 'p1' },
    approvalRequired,
    executor: 'client',
    timeoutMs: 2_000,
    ...(approvalRequired ? {} : { deadline }),
    at,
  },
});
const awaiting = [...running, ...asked, requested(false)];
const answer = (when = later, ok = true): ConversationCommand => ({
  type: 'SubmitToolResult',
  toolCallId: 'k',
  ok,
  ...(ok ? { result: { title: 'Home' } } : { error: { code: 'client_error', message: 'no page' } }),
  by: 'ana',
  at: when,
});
const completed = (ok: boolean, outcome: object, when: string): ConversationEvent => ({
  type: 'ToolCallCompleted',
  data: { turnId: 't1', toolCallId: 'k', name: 'read_page', ok, ...outcome, at: when } as never,
});
const timedOut = completed(
  false,
  { error: { code: 'timeout', message: `the client did not answer by ${deadline}` } },
  late,
);
const stateOf = (events: ConversationEvent[]) => events.reduce(evolve, initialConversation());

describe('client tool calls', () => {
  it('a client call is requested with its executor and a deadline timeoutMs after the model asked', () => {
    spec
      .given(running)
      .when(modelAsks('never'))
      .then([...asked, requested(false)]);
    const state = stateOf(awaiting);
    expect(state.status).toBe('awaiting_client');
    expect(pendingClientCalls(state)).toEqual([
      { toolCallId: 'k', tool: 'read_page', args: { id: 'p1' }, deadline },
    ]);
  });

  it('the client answers before the deadline: the result is the tool result, and the turn goes on', () => {
    spec
      .given(awaiting)
      .when(answer())
      .then([completed(true, { result: { title: 'Home' } }, later)]);
    spec
      .given(awaiting)
      .when(answer(later, false))
      .then([completed(false, { error: { code: 'client_error', message: 'no page' } }, later)]);
    expect(stateOf([...awaiting, completed(true, { result: {} }, later)]).status).toBe('running');
  });

  it('a second answer, or one after the deadline or the timeout, is a conflict; an unknown call is not found', () => {
    const answered = [...awaiting, completed(true, { result: { title: 'Home' } }, later)];
    spec
      .given(answered)
      .when(answer())
      .thenThrows(ConversationConflictError, /answered already/);
    spec
      .given(awaiting)
      .when(answer(late))
      .thenThrows(ConversationConflictError, /past its deadline/);
    spec
      .given([...awaiting, timedOut])
      .when(answer())
      .thenThrows(ConversationConflictError);
    spec
      .given(awaiting)
      .when({ ...answer(), toolCallId: 'nope' } as ConversationCommand)
      .thenThrows(NotFoundError);
    spec.given([]).when(answer()).thenThrows(NotFoundError);
  });

  it('the deadline times the call out once; before it, or after an answer, expiring does nothing', () => {
    const expire = (when: string): ConversationCommand => ({
      type: 'ExpireClientCall',
      toolCallId: 'k',
      at: when,
    });
    spec.given(awaiting).when(expire(late)).then([timedOut]);
    spec
      .given([...awaiting, timedOut])
      .when(expire(late))
      .then([]);
    spec.given(awaiting).when(expire(later)).then([]);
    spec
      .given([...awaiting, completed(true, { result: {} }, later)])
      .when(expire(late))
      .then([]);
  });

  it('approval first: the deadline starts with the approval, and the client may not answer before it', () => {
    const waitingApproval = [
      ...running,
      ...asked,
      requested(true),
      {
        type: 'ApprovalRequested',
        data: {
          turnId: 't1',
          approvalId: 'ap-k',
          toolCallId: 'k',
          name: 'read_page',
          args: { id: 'p1' },
          requestedAt: at,
        },
      } as ConversationEvent,
    ];
    spec.given(running).when(modelAsks('always')).then(waitingApproval.slice(running.length));
    expect(stateOf(waitingApproval).status).toBe('awaiting_approval');
    expect(pendingClientCalls(stateOf(waitingApproval))).toEqual([]);
    spec
      .given(waitingApproval)
      .when(answer())
      .thenThrows(ConversationConflictError, /approval/);
    const approve: ConversationCommand = {
      type: 'DecideApproval',
      approvalId: 'ap-k',
      decision: 'approve',
      by: 'ana',
      at: late,
    };
    const approvedDeadline = '2026-11-21T10:00:07.000Z';
    const approved: ConversationEvent = {
      type: 'ApprovalDecided',
      data: {
        turnId: 't1',
        approvalId: 'ap-k',
        toolCallId: 'k',
        decision: 'approve',
        by: 'ana',
        at: late,
        deadline: approvedDeadline,
      },
    };
    spec.given(waitingApproval).when(approve).then([approved]);
    const state = stateOf([...waitingApproval, approved]);
    expect(state.status).toBe('awaiting_client');
    expect(pendingClientCalls(state)).toEqual([
      { toolCallId: 'k', tool: 'read_page', args: { id: 'p1' }, deadline: approvedDeadline },
    ]);
  });
});
