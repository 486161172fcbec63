import type { RecordedEvent } from '@keel/core';
import type { HookDefinition } from '@keel/events';
import { describe, expect, it } from 'vitest';
import {
  afterFailure,
  answerData,
  hookBody,
  hookEventName,
  hookWants,
  hooksFor,
  scheduleOf,
} from './hook-policy.js';

const event = (type: string, streamName = 'conversation-c1', data: unknown = {}): RecordedEvent => ({
  eventId: '0192f1c2-0000-7000-8000-000000000001',
  type,
  data,
  metadata: {},
  tenantId: 'acme',
  streamName,
  version: 7,
  commitId: '0192f1c2-0000-7000-8000-0000000000c1',
  recordedAt: '2026-11-24T06:00:00.000Z',
});

const hook = (name: string, events: string[], agentId?: string): HookDefinition => ({
  name,
  url: 'https://hooks.example.com/keel',
  events,
  ...(agentId === undefined ? {} : { agentId }),
});

describe('hook policy', () => {
  it('names the durable events of conversations and runs by their stream names, never a hook answer', () => {
    expect(hookEventName(event('TurnCompleted'))).toBe('turn.completed');
    expect(hookEventName(event('ToolCallCompleted'))).toBe('tool.result');
    expect(hookEventName(event('ApprovalRequested'))).toBe('approval.required');
    expect(hookEventName(event('RunCompleted', 'run-r1'))).toBe('run.completed');
    expect(hookEventName(event('UserMessageAdded'))).toBeUndefined();
    expect(hookEventName(event('HookDataReceived'))).toBeUndefined();
    // A tool call's own stream is not a conversation.
    expect(hookEventName(event('TurnCompleted', 'toolcall-x'))).toBeUndefined();
  });

  it('matches hooks by event name, and by agent when the hook names one', () => {
    const hooks = {
      all: hook('all', ['turn.completed', 'turn.failed']),
      tools: hook('tools', ['tool.result']),
      chat: hook('chat', ['turn.completed'], 'chat'),
    };
    expect(hooksFor(event('TurnCompleted'), hooks).map((h) => h.name)).toEqual(['all', 'chat']);
    expect(hookWants(hooks.chat, event('TurnCompleted'), 'chat')).toBe(true);
    expect(hookWants(hooks.chat, event('TurnCompleted'), 'support')).toBe(false);
    expect(hookWants(hooks.chat, event('TurnCompleted', 'run-r1'), undefined)).toBe(false);
    expect(hookWants(hooks.all, event('TurnFailed'), undefined)).toBe(true);
    expect(hookWants(hooks.tools, event('TurnFailed'), 'chat')).toBe(false);
  });

  it('retries after each wait of the schedule, then dead-letters', () => {
    const schedule = scheduleOf('100, 2000');
    expect(afterFailure(schedule, 1, 1_000)).toEqual({ kind: 'retry', retryAt: 1_100 });
    expect(afterFailure(schedule, 2, 1_000)).toEqual({ kind: 'retry', retryAt: 3_000 });
    expect(afterFailure(schedule, 3, 1_000)).toEqual({ kind: 'dead-letter' });
  });

  it('sends the event id, public name, conversation or run, version and data', () => {
    expect(
      JSON.parse(hookBody('audit', event('TurnCompleted', 'conversation-c1', { turnId: 't1' }))),
    ).toEqual({
      hook: 'audit',
      eventId: '0192f1c2-0000-7000-8000-000000000001',
      event: 'turn.completed',
      tenantId: 'acme',
      conversationId: 'c1',
      version: 7,
      at: '2026-11-24T06:00:00.000Z',
      data: { turnId: 't1' },
    });
    expect(JSON.parse(hookBody('audit', event('RunCompleted', 'run-r1')))).toMatchObject({ runId: 'r1' });
  });

  it('takes `data` from an answer only when it is an object', () => {
    expect(answerData({ data: { title: 'Refunds' } })).toEqual({ title: 'Refunds' });
    for (const body of [undefined, 'text', [], { data: [] }, { data: 'x' }, { other: {} }]) {
      expect(answerData(body)).toBeUndefined();
    }
  });
});
