import { NotFoundError, ValidationError } from '@keel/core';
import { DeciderSpec } from '@keel/core/testing';
import type { ConversationEvent } from '@keel/events';
import { describe, expect, it } from 'vitest';
import type { ConversationCommand } from './conversation.commands.js';
import { ConversationConflictError, conversationDecider, decide } from './conversation.decider.js';
import { evolve, initialConversation } from './conversation.state.js';

const at = '2026-11-21T10:00:00.000Z';
const agent = { agentId: 'support', model: 'openai:gpt-4o-mini', maxSteps: 3 };
const spec = DeciderSpec.for(conversationDecider);

const created: ConversationEvent = {
  type: 'ConversationCreated',
  data: { conversationId: 'c1', agentId: 'support', createdAt: at },
};
const userMessage = (turnId = 't1', messageId = 'm1', content = 'hi'): ConversationEvent => ({
  type: 'UserMessageAdded',
  data: { messageId, turnId, content, at },
});
const turnStarted = (turnId = 't1', maxSteps = 3): ConversationEvent => ({
  type: 'TurnStarted',
  data: { turnId, agent: { ...agent, maxSteps }, role: 'editor', at },
});
const usage = {
  model: 'gpt-4o-mini',
  promptTokens: 10,
  completionTokens: 5,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  costUsd: 0.001,
};
const submit = (
  ifBusy: 'reject' | 'enqueue' | 'interrupt' = 'reject',
  turnId = 't2',
): ConversationCommand => ({
  type: 'SubmitMessage',
  turnId,
  messageId: `m-${turnId}`,
  content: 'next',
  ifBusy,
  agent,
  role: 'editor',
  by: 'ana',
  at,
});
const modelOutput = (
  toolCalls: Array<{ toolCallId: string; name: string; approval?: 'never' | 'always'; refuse?: string }> = [],
  turnId = 't1',
  messageId = 'a1',
): ConversationCommand => ({
  type: 'RecordModelOutput',
  turnId,
  step: 1,
  messageId,
  text: toolCalls.length ? '' : 'done',
  toolCalls: toolCalls.map((c) => ({
    toolCallId: c.toolCallId,
    name: c.name,
    args: { q: 1 },
    verdict: c.refuse
      ? { kind: 'refuse', error: { code: 'forbidden_tool', message: c.refuse } }
      : { kind: 'allow', approval: c.approval ?? 'never' },
  })),
  usage,
  approvalIds: Object.fromEntries(toolCalls.map((c) => [c.toolCallId, `ap-${c.toolCallId}`])),
  at,
});
const assistant = (
  toolCalls: Array<{ toolCallId: string; name: string }>,
  step = 1,
  turnId = 't1',
): ConversationEvent[] => [
  {
    type: 'AssistantMessageCompleted',
    data: {
      turnId,
      step,
      messageId: 'a1',
      text: toolCalls.length ? '' : 'done',
      toolCalls: toolCalls.map((c) => ({ ...c, args: { q: 1 } })),
      at,
    },
  },
  { type: 'UsageRecorded', data: { turnId, step, ...usage, at } },
];
const requested = (toolCallId: string, name: string, approvalRequired = false): ConversationEvent => ({
  type: 'ToolCallRequested',
  data: { turnId: 't1', toolCallId, name, args: { q: 1 }, approvalRequired, at },
});
const completed = (toolCallId: string, name: string, ok = true): ConversationEvent => ({
  type: 'ToolCallCompleted',
  data: { turnId: 't1', toolCallId, name, ok, ...(ok ? { result: { v: 1 } } : {}), at } as never,
});
const running = [created, userMessage(), turnStarted()];

describe('conversation decider', () => {
  it('creates once; a message starts a turn', () => {
    spec
      .given([])
      .when({ type: 'CreateConversation', conversationId: 'c1', agentId: 'support', at })
      .then([created]);
    spec
      .given([created])
      .when({ type: 'CreateConversation', conversationId: 'c1', agentId: 'support', at })
      .thenThrows(ConversationConflictError);
    spec
      .given([created])
      .when(submit('reject', 't1'))
      .then([
        { type: 'UserMessageAdded', data: { messageId: 'm-t1', turnId: 't1', content: 'next', at } },
        { type: 'TurnStarted', data: { turnId: 't1', agent, role: 'editor', at } },
      ]);
    spec.given([]).when(submit()).thenThrows(NotFoundError);
    spec
      .given([created])
      .when({ ...submit(), content: '   ' } as ConversationCommand)
      .thenThrows(ValidationError);
  });

  it('a busy conversation rejects, enqueues or interrupts, as the message asks', () => {
    spec
      .given(running)
      .when(submit('reject'))
      .thenThrows(ConversationConflictError, /already running/);
    spec
      .given(running)
      .when(submit('enqueue'))
      .then([
        { type: 'UserMessageAdded', data: { messageId: 'm-t2', turnId: 't2', content: 'next', at } },
        { type: 'TurnQueued', data: { turnId: 't2', messageId: 'm-t2', agent, role: 'editor', at } },
      ]);
    spec
      .given([...running, ...assistant([{ toolCallId: 'x', name: 'search' }]), requested('x', 'search')])
      .when(submit('interrupt'))
      .then([
        {
          type: 'ToolCallCompleted',
          data: {
            turnId: 't1',
            toolCallId: 'x',
            name: 'search',
            ok: false,
            error: { code: 'cancelled', message: 'not run: the turn was cancelled by ana' },
            at,
          },
        },
        { type: 'TurnCancelled', data: { turnId: 't1', by: 'ana', withdrawnApprovals: [], at } },
        { type: 'UserMessageAdded', data: { messageId: 'm-t2', turnId: 't2', content: 'next', at } },
        { type: 'TurnStarted', data: { turnId: 't2', agent, role: 'editor', at } },
      ]);
  });

  it('a model answer without tool calls completes the turn and starts the queued one', () => {
    const queued: ConversationEvent[] = [
      userMessage('t2', 'm2'),
      { type: 'TurnQueued', data: { turnId: 't2', messageId: 'm2', agent, role: 'editor', at } },
    ];
    spec
      .given([...running, ...queued])
      .when(modelOutput())
      .then([
        ...assistant([]),
        { type: 'TurnCompleted', data: { turnId: 't1', finishReason: 'stop', affected: [], at } },
        { type: 'TurnStarted', data: { turnId: 't2', agent, role: 'editor', at } },
      ]);
    spec
      .given(running)
      .when(modelOutput([], 'other'))
      .thenThrows(ConversationConflictError, /not running/);
  });

  it('tool calls: allowed ones are requested, approval ones pause the turn, refused ones become tool errors', () => {
    spec
      .given(running)
      .when(
        modelOutput([
          { toolCallId: 'a', name: 'search' },
          { toolCallId: 'b', name: 'refund', approval: 'always' },
          { toolCallId: 'c', name: 'admin_only', refuse: 'role editor may not call admin_only' },
        ]),
      )
      .then([
        ...assistant([
          { toolCallId: 'a', name: 'search' },
          { toolCallId: 'b', name: 'refund' },
          { toolCallId: 'c', name: 'admin_only' },
        ]),
        requested('a', 'search'),
        requested('b', 'refund', true),
        {
          type: 'ApprovalRequested',
          data: {
            turnId: 't1',
            approvalId: 'ap-b',
            toolCallId: 'b',
            name: 'refund',
            args: { q: 1 },
            requestedAt: at,
          },
        },
        {
          type: 'ToolCallCompleted',
          data: {
            turnId: 't1',
            toolCallId: 'c',
            name: 'admin_only',
            ok: false,
            error: { code: 'forbidden_tool', message: 'role editor may not call admin_only' },
            at,
          },
        },
      ]);
    const paused = [
      ...running,
      ...assistant([{ toolCallId: 'b', name: 'refund' }]),
      requested('b', 'refund', true),
    ];
    const state = [
      ...paused,
      {
        type: 'ApprovalRequested',
        data: {
          turnId: 't1',
          approvalId: 'ap-b',
          toolCallId: 'b',
          name: 'refund',
          args: {},
          requestedAt: at,
        },
      } as ConversationEvent,
    ].reduce(evolve, initialConversation());
    expect(state.status).toBe('awaiting_approval');
    expect(state.pendingApprovals.map((a) => a.approvalId)).toEqual(['ap-b']);
  });

  it('approvals: approve releases, deny is a tool error the model sees, twice is a conflict, unknown is not found', () => {
    const waiting: ConversationEvent[] = [
      ...running,
      ...assistant([{ toolCallId: 'b', name: 'refund' }]),
      requested('b', 'refund', true),
      {
        type: 'ApprovalRequested',
        data: {
          turnId: 't1',
          approvalId: 'ap-b',
          toolCallId: 'b',
          name: 'refund',
          args: {},
          requestedAt: at,
        },
      },
    ];
    const approve = {
      type: 'DecideApproval',
      approvalId: 'ap-b',
      decision: 'approve',
      by: 'ana',
      at,
    } as const;
    const approved: ConversationEvent = {
      type: 'ApprovalDecided',
      data: { turnId: 't1', approvalId: 'ap-b', toolCallId: 'b', decision: 'approve', by: 'ana', at },
    };
    spec.given(waiting).when(approve).then([approved]);
    spec
      .given(waiting)
      .when(approve)
      .thenState([...waiting, approved].reduce(evolve, initialConversation()));
    expect([...waiting, approved].reduce(evolve, initialConversation()).status).toBe('running');
    spec
      .given(waiting)
      .when({
        type: 'DecideApproval',
        approvalId: 'ap-b',
        decision: 'deny',
        by: 'bob',
        reason: 'too much',
        at,
      })
      .then([
        {
          type: 'ApprovalDecided',
          data: {
            turnId: 't1',
            approvalId: 'ap-b',
            toolCallId: 'b',
            decision: 'deny',
            by: 'bob',
            reason: 'too much',
            at,
          },
        },
        {
          type: 'ToolCallCompleted',
          data: {
            turnId: 't1',
            toolCallId: 'b',
            name: 'refund',
            ok: false,
            error: { code: 'denied', message: 'denied by bob: too much' },
            at,
          },
        },
      ]);
    spec
      .given([...waiting, approved])
      .when(approve)
      .thenThrows(ConversationConflictError, /already decided/);
    spec
      .given(waiting)
      .when({ ...approve, approvalId: 'nope' })
      .thenThrows(NotFoundError);
  });

  it('tool results complete their call once; late results of a cancelled turn change nothing', () => {
    const calling = [
      ...running,
      ...assistant([{ toolCallId: 'a', name: 'search' }]),
      requested('a', 'search'),
    ];
    const result = { type: 'RecordToolResult', toolCallId: 'a', ok: true, result: { v: 1 }, at } as const;
    spec
      .given(calling)
      .when(result)
      .then([completed('a', 'search')]);
    spec
      .given([...calling, completed('a', 'search')])
      .when(result)
      .then([]);
    const cancelled = decide(
      { type: 'CancelTurn', by: 'ana', at },
      calling.reduce(evolve, initialConversation()),
    );
    spec
      .given([...calling, ...cancelled])
      .when(result)
      .then([]);
  });

  it('a successful tool result moves the conversation along its agent phases; a failed one does not', () => {
    const phases = {
      initial: 'start',
      transitions: [{ from: 'start', tool: 'verify_identity', to: 'verified' }],
    };
    const phased: ConversationEvent[] = [
      created,
      userMessage(),
      { type: 'TurnStarted', data: { turnId: 't1', agent: { ...agent, phases }, role: 'editor', at } },
      ...assistant([{ toolCallId: 'v', name: 'verify_identity' }]),
      requested('v', 'verify_identity'),
    ];
    const ok = { type: 'RecordToolResult', toolCallId: 'v', ok: true, result: { v: 1 }, at } as const;
    spec
      .given(phased)
      .when(ok)
      .then([
        completed('v', 'verify_identity'),
        { type: 'PhaseChanged', data: { turnId: 't1', from: 'start', to: 'verified', toolCallId: 'v', at } },
      ]);
    const events = decide(ok, phased.reduce(evolve, initialConversation()));
    expect([...phased, ...events].reduce(evolve, initialConversation()).phase).toBe('verified');
    spec
      .given(phased)
      .when({ type: 'RecordToolResult', toolCallId: 'v', ok: false, error: { code: 'x', message: 'no' }, at })
      .then([
        {
          type: 'ToolCallCompleted',
          data: {
            turnId: 't1',
            toolCallId: 'v',
            name: 'verify_identity',
            ok: false,
            error: { code: 'x', message: 'no' },
            at,
          },
        },
      ]);
  });

  it('turn.completed names what the successful calls affect (sorted, unique), not the failed ones', () => {
    const withAffects = (toolCallId: string, name: string, affects: string[]): ConversationEvent => ({
      type: 'ToolCallRequested',
      data: { turnId: 't1', toolCallId, name, args: { q: 1 }, approvalRequired: false, affects, at },
    });
    const calls = [
      { toolCallId: 'a', name: 'save_page' },
      { toolCallId: 'b', name: 'edit_schema' },
      { toolCallId: 'c', name: 'touch_pages' },
    ];
    const step1 = [
      ...running,
      ...assistant(calls),
      withAffects('a', 'save_page', ['pages', 'media']),
      withAffects('b', 'edit_schema', ['schema']),
      withAffects('c', 'touch_pages', ['pages']),
      completed('a', 'save_page'),
      completed('b', 'edit_schema', false),
      completed('c', 'touch_pages'),
    ];
    const answer = { ...modelOutput(), step: 2 } as ConversationCommand;
    const events = decide(answer, step1.reduce(evolve, initialConversation()));
    expect(events.find((e) => e.type === 'TurnCompleted')?.data).toMatchObject({
      finishReason: 'stop',
      affected: ['media', 'pages'],
    });
  });

  it("a call a `when` let through is recorded as decided by policy, with the tool's affects on its request", () => {
    const command = modelOutput([{ toolCallId: 'a', name: 'delete_page' }]) as Extract<
      ConversationCommand,
      { type: 'RecordModelOutput' }
    >;
    command.toolCalls[0]!.verdict = {
      kind: 'allow',
      approval: 'never',
      passedByPolicy: true,
      affects: ['pages'],
    };
    spec
      .given(running)
      .when(command)
      .then([
        ...assistant([{ toolCallId: 'a', name: 'delete_page' }]),
        {
          type: 'ToolCallRequested',
          data: {
            turnId: 't1',
            toolCallId: 'a',
            name: 'delete_page',
            args: { q: 1 },
            approvalRequired: false,
            affects: ['pages'],
            at,
          },
        },
        {
          type: 'ApprovalDecidedByPolicy',
          data: { turnId: 't1', approvalId: 'ap-a', toolCallId: 'a', name: 'delete_page', at },
        },
      ]);
  });

  it('refuses a second output for a step another worker already recorded', () => {
    const stepped = [
      ...running,
      ...assistant([{ toolCallId: 'c', name: 'admin_only' }]),
      completed('c', 'admin_only', false),
    ];
    spec
      .given(stepped)
      .when(modelOutput())
      .thenThrows(ConversationConflictError, /step 1 is already recorded/);
    spec
      .given(stepped)
      .when({ ...modelOutput(), step: 2 } as ConversationCommand)
      .then([
        ...assistant([], 2),
        { type: 'TurnCompleted', data: { turnId: 't1', finishReason: 'stop', affected: [], at } },
      ]);
  });

  it('never exceeds maxSteps: the last step runs no tools and ends the turn with max_steps', () => {
    const oneStep = [created, userMessage(), turnStarted('t1', 1)];
    spec
      .given(oneStep)
      .when(modelOutput([{ toolCallId: 'a', name: 'search' }]))
      .then([
        ...assistant([{ toolCallId: 'a', name: 'search' }]),

        {
          type: 'ToolCallCompleted',
          data: {
            turnId: 't1',
            toolCallId: 'a',
            name: 'search',
            ok: false,
            error: { code: 'max_steps', message: 'not run: the turn reached its limit of 1 steps' },
            at,
          },
        },
        { type: 'TurnCompleted', data: { turnId: 't1', finishReason: 'max_steps', affected: [], at } },
      ]);
    const state = oneStep.reduce(evolve, initialConversation());
    expect(state.turn?.step).toBe(0);
  });

  it('cancel withdraws the turn approvals; cancelling an idle conversation is a conflict; failing closes open calls', () => {
    const waiting: ConversationEvent[] = [
      ...running,
      ...assistant([{ toolCallId: 'b', name: 'refund' }]),
      requested('b', 'refund', true),
      {
        type: 'ApprovalRequested',
        data: {
          turnId: 't1',
          approvalId: 'ap-b',
          toolCallId: 'b',
          name: 'refund',
          args: {},
          requestedAt: at,
        },
      },
    ];
    const events = decide(
      { type: 'CancelTurn', by: 'ana', at },
      waiting.reduce(evolve, initialConversation()),
    );
    expect(events.map((e) => e.type)).toEqual(['ToolCallCompleted', 'TurnCancelled']);
    const after = [...waiting, ...events].reduce(evolve, initialConversation());
    expect(after).toMatchObject({ status: 'idle', pendingApprovals: [] });
    expect(after.turn).toBeUndefined();
    spec
      .given([...waiting, ...events])
      .when({ type: 'DecideApproval', approvalId: 'ap-b', decision: 'approve', by: 'ana', at })
      .thenThrows(ConversationConflictError);
    spec
      .given([created])
      .when({ type: 'CancelTurn', by: 'ana', at })
      .thenThrows(ConversationConflictError, /no turn/);
    const failed = decide(
      { type: 'FailTurn', turnId: 't1', error: { code: 'provider_error', message: '500' }, at },
      waiting.reduce(evolve, initialConversation()),
    );
    expect(failed.map((e) => e.type)).toEqual(['ToolCallCompleted', 'TurnFailed']);
    expect([...waiting, ...failed].reduce(evolve, initialConversation()).status).toBe('failed');
  });

  it('a queued message stays out of the messages (and the running prompt) until its own turn starts', () => {
    const rebuild = (events: ConversationEvent[]) => events.reduce(evolve, initialConversation());
    const calling = [
      ...running,
      ...assistant([{ toolCallId: 'a', name: 'search' }]),
      requested('a', 'search'),
    ];
    const enqueued = decide(submit('enqueue'), rebuild(calling));
    // The events keep their shape: the message is recorded at once, with its turn queued.
    expect(enqueued).toEqual([
      { type: 'UserMessageAdded', data: { messageId: 'm-t2', turnId: 't2', content: 'next', at } },
      { type: 'TurnQueued', data: { turnId: 't2', messageId: 'm-t2', agent, role: 'editor', at } },
    ]);
    const waiting = [...calling, ...enqueued, completed('a', 'search')];
    const meanwhile = rebuild(waiting);
    expect(meanwhile.messages.map((m) => m.id)).toEqual(['m1', 'a1', 'tool-a']);
    expect(meanwhile.turn?.turnId).toBe('t1');
    expect(meanwhile.queued.map((q) => q.turnId)).toEqual(['t2']);

    const done = decide({ ...modelOutput([], 't1', 'a2'), step: 2 } as ConversationCommand, meanwhile);
    expect(done.map((e) => e.type)).toEqual([
      'AssistantMessageCompleted',
      'UsageRecorded',
      'TurnCompleted',
      'TurnStarted',
    ]);
    const next = rebuild([...waiting, ...done]);
    expect(next.messages.map((m) => [m.id, m.role])).toEqual([
      ['m1', 'user'],
      ['a1', 'assistant'],
      ['tool-a', 'tool'],
      ['a2', 'assistant'],
      ['m-t2', 'user'],
    ]);
    expect(next.turn?.turnId).toBe('t2');
    expect(next.queued).toEqual([]);
    expect(next.heldMessages).toEqual([]);
  });

  it('a cancelled or failed turn releases the next queued message with its turn; interrupt is not held', () => {
    const rebuild = (events: ConversationEvent[]) => events.reduce(evolve, initialConversation());
    const enqueued = [...running, ...decide(submit('enqueue'), rebuild(running))];
    const cancelled = decide({ type: 'CancelTurn', by: 'ana', at }, rebuild(enqueued));
    expect(rebuild([...enqueued, ...cancelled]).messages.map((m) => m.id)).toEqual(['m1', 'm-t2']);
    const failed = decide(
      { type: 'FailTurn', turnId: 't1', error: { code: 'model_error', message: 'boom' }, at },
      rebuild(enqueued),
    );
    expect(rebuild([...enqueued, ...failed]).messages.map((m) => m.id)).toEqual(['m1', 'm-t2']);
    const interrupted = [...running, ...decide(submit('interrupt'), rebuild(running))];
    expect(rebuild(interrupted).messages.map((m) => m.id)).toEqual(['m1', 'm-t2']);
    expect(rebuild(interrupted).turn?.turnId).toBe('t2');
  });

  it('the rebuilt state holds every message, call and result, and snapshots as plain JSON', () => {
    const calling = [
      ...running,
      ...assistant([{ toolCallId: 'a', name: 'search' }]),
      requested('a', 'search'),
      completed('a', 'search'),
    ];
    const more = decide(
      { ...modelOutput([], 't1', 'a2'), step: 2 } as ConversationCommand,
      calling.reduce(evolve, initialConversation()),
    );
    const state = [...calling, ...more].reduce(evolve, initialConversation());
    expect(state.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(state.messages[2]).toMatchObject({ toolCallId: 'a', content: '{"v":1}', ok: true });
    expect(state.usage).toEqual({
      promptTokens: 20,
      completionTokens: 10,
      cacheReadTokens: 0,
      costUsd: 0.002,
    });
    expect(state.status).toBe('idle');
    expect(JSON.parse(JSON.stringify(state))).toEqual(state);
  });

  it('an event type it does not know changes nothing but the version (the state stays a conversation)', () => {
    const state = running.reduce(evolve, initialConversation());
    const unknown = { type: 'FromANewerWriter', data: { turnId: 't1' } } as unknown as ConversationEvent;
    const after = evolve(state, unknown);
    expect(after).toEqual({ ...state, version: state.version + 1 });
    expect(decide(submit('enqueue'), after).map((e) => e.type)).toEqual(['UserMessageAdded', 'TurnQueued']);
  });
});
