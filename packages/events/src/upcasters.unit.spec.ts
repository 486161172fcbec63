import type { RecordedEvent } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { eventUpcasters } from './upcasters.js';

const usage = (data: Record<string, unknown>): RecordedEvent => ({
  eventId: 'e1',
  type: 'UsageRecorded',
  data: { turnId: 't1', step: 1, model: 'm', promptTokens: 3, completionTokens: 2, costUsd: null, ...data },
  metadata: {},
  tenantId: 'acme',
  streamName: 'conversation-c1',
  version: 3,
  commitId: 'c1',
  recordedAt: '2026-01-02T03:04:05.000Z',
});

describe('UsageRecorded upcaster', () => {
  it('reads an old event without `at` with the commit time as its `at`', () => {
    const lifted = eventUpcasters().upcast(usage({}));
    expect(lifted.data).toMatchObject({ turnId: 't1', step: 1, at: '2026-01-02T03:04:05.000Z' });
  });

  it('keeps the `at` an event was recorded with', () => {
    const event = usage({ at: '2026-01-02T03:00:00.000Z' });
    expect(eventUpcasters().upcast(event)).toBe(event);
  });
});
