// The frames of conversation management (API.md): conversation.updated and turn.started's
// replaceFrom, the same on the SSE feed and as keel.conversations.v1.TurnEvent; a rating has none.
import type { RecordedEvent } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { turnEventOf } from '../grpc/turn-events.js';
import { durableFrame } from './feed-frames.js';

const at = '2026-11-24T10:00:00.000Z';
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

describe('conversation management frames', () => {
  it('shows a PATCH as conversation.updated with what changed, on SSE and gRPC', () => {
    const frame = durableFrame(
      recorded(9, 'ConversationUpdated', { title: 'Docs', metadata: { site: 'x' }, by: 'ana', at }),
    );
    expect(frame).toEqual({
      id: '9',
      event: 'conversation.updated',
      data: { title: 'Docs', metadata: { site: 'x' } },
    });
    expect(turnEventOf(frame!)).toEqual({
      id: '9',
      event: 'conversation.updated',
      conversationUpdated: { title: 'Docs', metadataJson: '{"site":"x"}' },
    });
    const titleOnly = durableFrame(
      recorded(10, 'ConversationUpdated', { title: 'T', by: 'system:agent', at }),
    );
    expect(titleOnly?.data).toEqual({ title: 'T' });
    expect(turnEventOf(titleOnly!)?.conversationUpdated).toEqual({ title: 'T' });
  });

  it("carries an edit's replaceFrom on turn.started; a rating is no frame", () => {
    const started = durableFrame(
      recorded(11, 'TurnStarted', { turnId: 'u2', agent: {}, role: 'editor', at, replaceFrom: 'm1' }),
    );
    expect(started?.data).toEqual({ turnId: 'u2', replaceFrom: 'm1' });
    expect(turnEventOf(started!)?.turnStarted).toMatchObject({ turnId: 'u2', replaceFrom: 'm1' });
    const rated = recorded(12, 'FeedbackGiven', {
      messageId: 'a1',
      rating: 'up',
      agentId: 'x',
      by: 'ana',
      at,
    });
    expect(durableFrame(rated)).toBeUndefined();
  });
});
