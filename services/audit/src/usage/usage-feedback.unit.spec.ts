// Feedback in usage (API.md "Conversation management"): rows grouped by agent carry the latest
// rating per message, counted once however often a page is applied.
import type { RecordedEvent } from '@keel/core';
import { InMemoryEventStore } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { AuditProjector } from '../projection/audit-projector.js';
import { InMemoryAuditStorage } from '../storage/in-memory-audit-storage.js';
import { answerUsage } from './usage-query.js';
import { checkUsageQuery } from './usage-request.js';

const at = '2026-11-24T10:00:00.000Z';
let position = 0;
const event = (type: string, data: object, version: number): RecordedEvent => ({
  eventId: `e${++position}`,
  type,
  data,
  metadata: { correlationId: `r${position}`, actor: { keyId: 'k1', role: 'editor', userId: 'ana' } },
  tenantId: 'acme',
  streamName: 'conversation-c1',
  version,
  globalPosition: position,
  commitId: `c${position}`,
  recordedAt: at,
});

describe('usage: feedback by agent', () => {
  it('counts the latest rating per message; a changed rating moves one; other groupings carry none', async () => {
    const agent = { agentId: 'support', model: 'openai:gpt-4o-mini', maxSteps: 3 };
    const usage = { model: 'openai:gpt-4o-mini', promptTokens: 10, completionTokens: 2, cacheReadTokens: 0 };
    const events = [
      event('UserMessageAdded', { messageId: 'm1', turnId: 't1', content: 'hi', at }, 1),
      event('TurnStarted', { turnId: 't1', agent, role: 'editor', at }, 2),
      event('UsageRecorded', { turnId: 't1', step: 1, ...usage, cacheWriteTokens: 0, costUsd: 0.01, at }, 3),
      event('FeedbackGiven', { messageId: 'a1', rating: 'up', agentId: 'support', by: 'ana', at }, 4),
      event('FeedbackGiven', { messageId: 'a2', rating: 'up', agentId: 'support', by: 'ana', at }, 5),
      event(
        'FeedbackGiven',
        { messageId: 'a2', rating: 'down', previous: 'up', agentId: 'support', by: 'ana', at },
        6,
      ),
    ];
    const storage = new InMemoryAuditStorage();
    const projector = new AuditProjector(new InMemoryEventStore(), storage);
    await projector.applyPage(events, position);
    await projector.applyPage(events, position);
    const query = (groupBy: 'agent' | 'model') =>
      answerUsage(
        storage,
        checkUsageQuery({ tenantId: 'acme', from: '2026-11-24', to: '2026-11-24', groupBy }),
      );
    expect((await query('agent')).rows).toEqual([
      {
        key: 'support',
        promptTokens: 10,
        completionTokens: 2,
        costUsd: 0.01,
        turns: 1,
        feedbackUp: 1,
        feedbackDown: 1,
      },
    ]);
    expect((await query('model')).rows).toEqual([
      { key: 'openai:gpt-4o-mini', promptTokens: 10, completionTokens: 2, costUsd: 0.01, turns: 1 },
    ]);
  });
});
