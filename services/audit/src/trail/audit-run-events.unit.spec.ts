import type { RecordedEvent } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { auditEntryOf } from './audit-events.js';

const recorded = (type: string, streamName: string, data: unknown): RecordedEvent => ({
  eventId: `e-${type}`,
  type,
  data,
  metadata: { correlationId: 'req-1', actor: { keyId: 'k1', role: 'admin', userId: 'u1' } },
  tenantId: 't1',
  streamName,
  version: 1,
  commitId: 'c1',
  recordedAt: '2026-11-24T03:00:00.000Z',
});

describe('the audit trail of teams and runs', () => {
  it('records a team configured or deleted, and a run started or cancelled, with who and which request', () => {
    const team = { teamId: 'blog', topology: 'pipeline', aggregation: 'last', members: [{}, {}] };
    expect(auditEntryOf(recorded('TeamConfigured', 'tenantconfig-t1', { team, at: '' }))).toMatchObject({
      tenantId: 't1',
      type: 'TeamConfigured',
      target: 'team:blog',
      actor: { keyId: 'k1', role: 'admin', userId: 'u1' },
      requestId: 'req-1',
      details: { topology: 'pipeline', aggregation: 'last', members: '2' },
    });
    expect(auditEntryOf(recorded('TeamDeleted', 'tenantconfig-t1', { teamId: 'blog' }))?.target).toBe(
      'team:blog',
    );
    const started = auditEntryOf(
      recorded('RunStarted', 'run-r1', { runId: 'r1', team, input: 'secret plan' }),
    );
    expect(started).toMatchObject({ target: 'run:r1', details: { teamId: 'blog' } });
    // The run's input is not copied into the trail.
    expect(JSON.stringify(started)).not.toContain('secret plan');
    expect(auditEntryOf(recorded('RunCancelled', 'run-r1', { runId: 'r1' }))?.target).toBe('run:r1');
    expect(auditEntryOf(recorded('TaskCompleted', 'run-r1', { taskId: 'r1.0' }))).toBeUndefined();
  });
});
