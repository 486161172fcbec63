import type { RecordedEvent } from '@keel/core';
import { describe, expect, it } from 'vitest';
import type { Conversation, CurrentTurn, TurnToolCall } from '../conversation/conversation.state.js';
import { initialConversation } from '../conversation/conversation.state.js';
import type { ModelStepOutput } from '../model/model-step.js';
import type { GuardContext } from './step-policy.js';
import {
  MAX_ARGS_DEPTH,
  dueStep,
  guardContext,
  isStepTrigger,
  judgeToolCall,
  keptToolCalls,
  recordModelOutput,
} from './step-policy.js';
import type { ResolvedTool } from './tool-catalog.js';

const event = (type: string, version: number, turnId = 't1'): RecordedEvent => ({
  eventId: `e${version}`,
  type,
  data: { turnId },
  metadata: {},
  tenantId: 'acme',
  streamName: 'conversation-c1',
  version,
  commitId: `c${version}`,
  recordedAt: '2026-01-01T00:00:00.000Z',
});

const turn = (step: number, toolCalls: TurnToolCall[] = [], maxSteps = 3): CurrentTurn => ({
  turnId: 't1',
  agent: { agentId: 'a1', model: 'demo:keel-demo', maxSteps },
  role: 'editor',
  step,
  toolCalls,
});
const running = (current: CurrentTurn | undefined): Conversation => ({
  ...initialConversation(),
  ...(current ? { turn: current } : {}),
});
const toolCall = (state: TurnToolCall['state']): TurnToolCall => ({
  toolCallId: `tc-${state}`,
  name: 'lookup',
  args: {},
  state,
});

describe('step policy: which step is due', () => {
  it('is triggered by a started turn and a completed tool call only', () => {
    expect(isStepTrigger(event('TurnStarted', 1))).toBe(true);
    expect(isStepTrigger(event('ToolCallCompleted', 1))).toBe(true);
    expect(isStepTrigger(event('ToolCallRequested', 1))).toBe(false);
    expect(isStepTrigger(event('AssistantMessageCompleted', 1))).toBe(false);
  });

  it('calls the model for the next step of a turn with nothing outstanding', () => {
    const current = turn(1, [toolCall('completed')]);
    expect(dueStep(event('ToolCallCompleted', 5), running(current), [])).toEqual({
      kind: 'model-step',
      turn: current,
      step: 2,
    });
  });

  it('waits while a tool call runs or awaits an approval', () => {
    for (const state of ['requested', 'awaiting_approval'] as const) {
      const current = turn(1, [toolCall('completed'), toolCall(state)]);
      expect(dueStep(event('ToolCallCompleted', 5), running(current), [])).toEqual({
        kind: 'none',
        reason: 'waiting-for-tool-results',
      });
    }
  });

  it('runs no step past max steps', () => {
    expect(dueStep(event('ToolCallCompleted', 5), running(turn(3)), [])).toEqual({
      kind: 'none',
      reason: 'max-steps-reached',
    });
  });

  it('leaves the step to a later trigger of the turn, or to the step already recorded', () => {
    for (const type of ['ToolCallCompleted', 'TurnStarted', 'AssistantMessageCompleted']) {
      expect(dueStep(event('ToolCallCompleted', 5), running(turn(1)), [event(type, 6)])).toEqual({
        kind: 'none',
        reason: 'superseded',
      });
    }
  });

  it("ignores another turn's later events", () => {
    const later = [event('ToolCallCompleted', 6, 't0')];
    expect(dueStep(event('TurnStarted', 5), running(turn(0)), later).kind).toBe('model-step');
  });

  it('does nothing for a turn that is over or not the current one', () => {
    expect(dueStep(event('TurnStarted', 5), running(undefined), [])).toEqual({
      kind: 'none',
      reason: 'not-current-turn',
    });
    expect(dueStep(event('TurnStarted', 5, 't2'), running(turn(0)), []).kind).toBe('none');
  });
});

const lookup: ResolvedTool = {
  name: 'lookup',
  description: 'looks up',
  inputSchema: { type: 'object' },
  approval: 'always',
  roles: [],
  phases: [],
};
const guard = (overrides: Partial<GuardContext> = {}): GuardContext => ({
  tools: [lookup],
  agent: { tools: ['lookup'] },
  role: 'editor',
  phase: undefined,
  validate: () => [],
  ...overrides,
});
const call = (name: string, args: unknown) => ({ toolCallId: 'k1', name, args });

describe('step policy: what the guard decides for each call', () => {
  it("allows a known tool with valid arguments, with the tool's approval", () => {
    expect(judgeToolCall(call('lookup', { id: 'x' }), guard())).toEqual({
      verdict: { kind: 'allow', approval: 'always' },
    });
  });

  it("carries the tool's affects, and says when a `when` let the call through without a person", () => {
    const deletePage: ResolvedTool = {
      ...lookup,
      name: 'delete_page',
      approval: { when: { type: 'object', required: ['id'] } },
      affects: ['pages'],
    };
    // The test's validator: a schema with `required` needs those keys (the `when`); others pass.
    const validate = (schema: Record<string, unknown>, args: unknown) =>
      ((schema.required as string[] | undefined) ?? []).every((k) => Object.hasOwn(Object(args), k))
        ? []
        : [{ path: '', message: 'missing' }];
    const ctx = guard({ tools: [deletePage], agent: { tools: ['delete_page'] }, validate });
    expect(judgeToolCall(call('delete_page', { slug: 'draft' }), ctx).verdict).toEqual({
      kind: 'allow',
      approval: 'never',
      passedByPolicy: true,
      affects: ['pages'],
    });
    expect(judgeToolCall(call('delete_page', { id: 'home' }), ctx).verdict).toEqual({
      kind: 'allow',
      approval: 'always',
      affects: ['pages'],
    });
  });

  it('refuses an unknown tool', () => {
    expect(judgeToolCall(call('nope', {}), guard()).verdict).toMatchObject({
      kind: 'refuse',
      error: { code: 'unknown_tool' },
    });
  });

  it('refuses arguments that were not JSON, and ones the schema rejects', () => {
    const notJson = judgeToolCall(call('lookup', '{oops'), guard()).verdict;
    expect(notJson.kind).toBe('refuse');
    const invalid = guard({ validate: () => [{ path: '/id', message: 'must be string' }] });
    expect(judgeToolCall(call('lookup', { id: 1 }), invalid).verdict.kind).toBe('refuse');
  });

  it("judges in the conversation's phase, else the agent's initial one", () => {
    const agent = {
      agentId: 'a1',
      model: 'demo:keel-demo',
      instructions: '',
      tools: ['lookup'],
      maxSteps: 3,
      temperature: 0,
      toolResultMaxChars: 1000,
      phases: { initial: 'triage', transitions: [] },
    };
    const validate = () => [];
    expect(guardContext(running(turn(0)), turn(0), agent, [lookup], validate).phase).toBe('triage');
    const inReview = { ...running(turn(0)), phase: 'review' };
    expect(guardContext(inReview, turn(0), agent, [lookup], validate)).toEqual({
      tools: [lookup],
      agent,
      role: 'editor',
      phase: 'review',
      validate,
      // A root conversation: no parent above it in a sub-agent chain.
      position: { conversationId: '', agent },
    });
  });

  it('refuses, never throws, when the call cannot be checked at all', () => {
    const boom = new Error('validator crashed');
    const judged = judgeToolCall(
      call('lookup', {}),
      guard({
        validate: () => {
          throw boom;
        },
      }),
    );
    expect(judged).toEqual({
      verdict: {
        kind: 'refuse',
        error: {
          code: 'invalid_tool_call',
          message: 'the call to "lookup" could not be checked; do the task without it.',
        },
      },
      uncheckable: boom,
    });
  });
});

const output = (toolCalls: ModelStepOutput['toolCalls']): ModelStepOutput => ({
  text: 'hello',
  toolCalls,
  usage: { promptTokens: 10, completionTokens: 5, cacheReadTokens: 2, cacheWriteTokens: 1 },
  model: 'gpt-test-2026',
  contextTokens: 10,
});
const ids = () => {
  let n = 0;
  return () => `id${++n}`;
};

describe('step policy: how a model answer maps to a command', () => {
  it('gives each call a Keel id and drops arguments nested too deep to keep', () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i <= MAX_ARGS_DEPTH; i++) deep = { d: deep };
    const kept = keptToolCalls([call('lookup', { a: 1 }), call('lookup', deep)], ids());
    expect(kept).toEqual([
      { toolCallId: 'id1', name: 'lookup', args: { a: 1 } },
      {
        toolCallId: 'id2',
        name: 'lookup',
        args: `(arguments nested deeper than ${MAX_ARGS_DEPTH} levels, not kept)`,
      },
    ]);
  });

  it('records the text, judged calls, approval ids and priced usage', () => {
    const calls = [call('lookup', {})];
    const verdicts = [{ kind: 'allow', approval: 'always' } as const];
    const priced = { costUsd: null, reason: 'unknown model', windowTokens: null };
    const command = recordModelOutput({
      turnId: 't1',
      step: 2,
      output: output(calls),
      calls,
      verdicts,
      priced,
      at: '2026-01-01T00:00:01.000Z',
      newId: ids(),
    });
    expect(command).toEqual({
      type: 'RecordModelOutput',
      turnId: 't1',
      step: 2,
      messageId: 'id1',
      text: 'hello',
      toolCalls: [{ ...calls[0], verdict: verdicts[0] }],
      usage: {
        model: 'gpt-test-2026',
        promptTokens: 10,
        completionTokens: 5,
        cacheReadTokens: 2,
        cacheWriteTokens: 1,
        costUsd: null,
        costReason: 'unknown model',
      },
      approvalIds: { k1: 'id2' },
      at: '2026-01-01T00:00:01.000Z',
    });
  });

  it('records a priced call without a cost reason', () => {
    const priced = { costUsd: 0.01, windowTokens: 8000 };
    const command = recordModelOutput({
      turnId: 't1',
      step: 1,
      output: output([]),
      calls: [],
      verdicts: [],
      priced,
      at: 'now',
      newId: ids(),
    });
    expect(command).toMatchObject({ usage: { costUsd: 0.01 }, approvalIds: {} });
    expect(command.type === 'RecordModelOutput' && 'costReason' in command.usage).toBe(false);
  });
});
