import type { RecordedEvent } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { durableFrame } from '../feed/feed-frames.js';
import { turnEventOf } from './turn-events.js';

// A hook's answer (API.md "Hooks") as the streams show it: SSE `data` { hook, data }, gRPC HookData.
const received: RecordedEvent = {
  eventId: '0192f1c2-0000-7000-8000-000000000002',
  type: 'HookDataReceived',
  data: { hook: 'titles', eventId: 'e1', data: { title: 'Refunds', suggestions: ['Track'] }, at: 'now' },
  metadata: {},
  tenantId: 'acme',
  streamName: 'conversation-c1',
  version: 12,
  commitId: '0192f1c2-0000-7000-8000-0000000000c2',
  recordedAt: '2026-11-24T06:00:00.000Z',
};

describe('a hook answer on the streams', () => {
  it('is the durable SSE frame data { hook, data } at its version, and the gRPC HookData payload', () => {
    const frame = durableFrame(received);
    expect(frame).toEqual({
      id: '12',
      event: 'data',
      data: { hook: 'titles', data: { title: 'Refunds', suggestions: ['Track'] } },
    });
    expect(turnEventOf(frame!)).toEqual({
      id: '12',
      event: 'data',
      hookData: { hook: 'titles', dataJson: '{"title":"Refunds","suggestions":["Track"]}' },
    });
  });
});
