import type { RecordedEvent } from '@keel/core';
import { ValidationError } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { durableFrame, ephemeralFrame, ephemeralVersion, renderFrame, resumeAfter } from './feed-frames.js';

const at = '2026-01-01T00:00:00.000Z';
const recorded = (version: number, type: string, data: unknown): RecordedEvent => ({
  eventId: `e${version}`,
  type,
  data,
  metadata: {},
  tenantId: 't1',
  streamName: 'conversation-c1',
  version,
  commitId: `c${version}`,
  recordedAt: at,
});

describe('durableFrame', () => {
  it('maps every API event to its name and data, id = the version', () => {
    const cases: Array<[string, unknown, string, unknown]> = [
      ['TurnStarted', { turnId: 'u1', agent: {}, role: 'editor', at }, 'turn.started', { turnId: 'u1' }],
      [
        'ToolCallRequested',
        { turnId: 'u1', toolCallId: 'k1', name: 'w', args: { a: 1 }, approvalRequired: false, at },
        'tool.call',
        { turnId: 'u1', toolCallId: 'k1', name: 'w', args: { a: 1 } },
      ],
      [
        'ApprovalRequested',
        { turnId: 'u1', approvalId: 'p1', toolCallId: 'k1', name: 'w', args: [1], requestedAt: at },
        'approval.required',
        { turnId: 'u1', approvalId: 'p1', toolCallId: 'k1', name: 'w', args: [1] },
      ],
      [
        'ApprovalDecided',
        { turnId: 'u1', approvalId: 'p1', toolCallId: 'k1', decision: 'deny', by: 'bob', reason: 'no', at },
        'approval.decided',
        { approvalId: 'p1', decision: 'deny', by: 'bob' },
      ],
      [
        'ToolCallCompleted',
        { turnId: 'u1', toolCallId: 'k1', name: 'w', ok: true, result: { t: 3 }, at },
        'tool.result',
        { turnId: 'u1', toolCallId: 'k1', name: 'w', ok: true, result: { t: 3 } },
      ],
      [
        'ToolCallCompleted',
        { turnId: 'u1', toolCallId: 'k1', name: 'w', ok: false, error: { code: 'x', message: 'y' }, at },
        'tool.result',
        { turnId: 'u1', toolCallId: 'k1', name: 'w', ok: false, error: { code: 'x', message: 'y' } },
      ],
      [
        'AssistantMessageCompleted',
        { turnId: 'u1', step: 1, messageId: 'm1', text: 'hi', toolCalls: [], at },
        'message.completed',
        { turnId: 'u1', messageId: 'm1', text: 'hi' },
      ],
      [
        'UsageRecorded',
        {
          turnId: 'u1',
          step: 1,
          model: 'openai:x',
          promptTokens: 10,
          completionTokens: 2,
          cacheReadTokens: 1,
          cacheWriteTokens: 0,
          costUsd: null,
        },
        'usage',
        {
          turnId: 'u1',
          model: 'openai:x',
          promptTokens: 10,
          completionTokens: 2,
          cacheReadTokens: 1,
          costUsd: null,
        },
      ],
      [
        'TurnCompleted',
        { turnId: 'u1', finishReason: 'max_steps', at },
        'turn.completed',
        { turnId: 'u1', finishReason: 'max_steps', affected: [] }, // recorded before affected: none
      ],
      [
        'TurnCompleted',
        { turnId: 'u1', finishReason: 'stop', affected: ['pages', 'schema'], at },
        'turn.completed',
        { turnId: 'u1', finishReason: 'stop', affected: ['pages', 'schema'] },
      ],
      [
        'ApprovalDecidedByPolicy',
        { turnId: 'u1', approvalId: 'p2', toolCallId: 'k2', name: 'delete_page', at },
        'approval.decided',
        { approvalId: 'p2', toolCallId: 'k2', decision: 'approve', by: 'policy' },
      ],
      [
        'TurnFailed',
        { turnId: 'u1', error: { code: 'model', message: 'boom' }, at },
        'turn.failed',
        { turnId: 'u1', error: { code: 'model', message: 'boom' } },
      ],
      [
        'TurnCancelled',
        { turnId: 'u1', by: 'bob', withdrawnApprovals: ['p1'], at },
        'turn.cancelled',
        { turnId: 'u1' },
      ],
    ];
    for (const [type, data, event, expected] of cases) {
      expect(durableFrame(recorded(7, type, data)), type).toEqual({ id: '7', event, data: expected });
    }
  });

  it('skips the events the API does not name, and unknown types', () => {
    for (const type of [
      'ConversationCreated',
      'UserMessageAdded',
      'TurnQueued',
      'PhaseChanged',
      'Nope',
      'toString',
    ]) {
      expect(durableFrame(recorded(1, type, {})), type).toBeUndefined();
    }
  });
});

describe('ephemeralFrame', () => {
  it('maps a delta to message.delta with id <last version>.<seq>', () => {
    expect(ephemeralFrame({ type: 'delta', turnId: 'u1', step: 1, seq: 4, text: 'He' }, 3, 0)).toEqual({
      seq: 4,
      frame: { id: '3.4', event: 'message.delta', data: { turnId: 'u1', text: 'He' } },
    });
  });

  it('maps a context message to context, reusing the last seq', () => {
    const context = { type: 'context', turnId: 'u1', step: 1, contextTokens: 120, windowTokens: null };
    expect(ephemeralFrame(context, 5, 9)).toEqual({
      seq: 9,
      frame: { id: '5.9', event: 'context', data: { turnId: 'u1', contextTokens: 120, windowTokens: null } },
    });
  });

  it('reads the log version a message follows, when it names a whole one', () => {
    expect(ephemeralVersion({ type: 'delta', turnId: 'u1', seq: 1, text: 'a', version: 7 })).toBe(7);
    for (const message of [{ type: 'delta', turnId: 'u1' }, { version: '7' }, { version: 1.5 }, null, 'x']) {
      expect(ephemeralVersion(message)).toBeUndefined();
    }
  });

  it('ignores anything else', () => {
    for (const message of [null, 'x', [], { type: 'delta' }, { type: 'cancel', turnId: 'u1' }]) {
      expect(ephemeralFrame(message, 1, 1)).toBeUndefined();
    }
  });
});

describe('renderFrame', () => {
  it('writes id, event and one data line of JSON, then a blank line', () => {
    expect(renderFrame({ id: '2.1', event: 'message.delta', data: { text: 'a\nb' } })).toBe(
      'id: 2.1\nevent: message.delta\ndata: {"text":"a\\nb"}\n\n',
    );
  });
});

describe('resumeAfter', () => {
  it('reads Last-Event-ID (version or version.seq) before ?after=, default 0', () => {
    expect(resumeAfter(undefined, undefined)).toBe(0);
    expect(resumeAfter('12', undefined)).toBe(12);
    expect(resumeAfter('12.7', undefined)).toBe(12);
    expect(resumeAfter('4', '9')).toBe(4);
    expect(resumeAfter(undefined, '9')).toBe(9);
    expect(resumeAfter('', '9')).toBe(9);
    expect(resumeAfter(undefined, '0')).toBe(0);
  });

  it('refuses a malformed Last-Event-ID or after with a ValidationError naming the field', () => {
    for (const bad of ['abc', '-1', '1.', '.1', '1.2.3', '01', '1e3', '99999999999999999']) {
      expect(() => resumeAfter(bad, undefined), bad).toThrow(ValidationError);
      expect(() => resumeAfter(bad, undefined)).toThrow(expect.objectContaining({ field: 'Last-Event-ID' }));
    }
    for (const bad of ['x', '1.2', '-3', '']) {
      expect(() => resumeAfter(undefined, bad), bad).toThrow(expect.objectContaining({ field: 'after' }));
    }
  });
});
