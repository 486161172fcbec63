import type { RecordedEvent } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { auditEntryOf } from './audit-events.js';

const recorded = (type: string, streamName: string, data: unknown): RecordedEvent => ({
  eventId: `e-${type}`,
  type,
  data,
  metadata: { correlationId: 'req-1', actor: { keyId: 'k1', role: 'editor', userId: 'u1' } },
  tenantId: 't1',
  streamName,
  version: 1,
  commitId: 'c1',
  recordedAt: '2026-11-24T03:00:00.000Z',
});

describe('the audit trail of turns and defaults', () => {
  it('records how a turn ended: its finish reason, or its error code without the message', () => {
    expect(
      auditEntryOf(
        recorded('TurnCompleted', 'conversation-c1', { turnId: 'u1', finishReason: 'stop', at: '' }),
      ),
    ).toMatchObject({
      type: 'TurnCompleted',
      target: 'turn:u1',
      conversationId: 'c1',
      details: { finishReason: 'stop' },
    });
    const failed = auditEntryOf(
      recorded('TurnFailed', 'conversation-c1', {
        turnId: 'u2',
        error: { code: 'rate_limited', message: 'key sk-1' },
      }),
    );
    expect(failed).toMatchObject({ target: 'turn:u2', details: { code: 'rate_limited' } });
    expect(JSON.stringify(failed)).not.toContain('sk-1');
  });

  it('records the defaults set', () => {
    expect(
      auditEntryOf(
        recorded('DefaultsConfigured', 'tenantdefaults-t1', {
          defaults: { model: 'openai:gpt-4o', maxSteps: 4 },
        }),
      ),
    ).toMatchObject({ target: 'defaults', details: { model: 'openai:gpt-4o', maxSteps: '4' } });
  });
});
