// A deleted conversation in usage and the audit trail (API.md DELETE: "usage figures and the audit
// trail entry remain"; the content does not): its events still count by their clear part, and
// free text copied into its entries (an approval's reason) is dropped at the deletion.
import type { RecordedEvent } from '@keel/core';
import { DataKeyring, EventSealer, InMemoryDataKeyStore, InMemoryEventStore } from '@keel/core';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { InMemoryAuditStorage } from '../storage/in-memory-audit-storage.js';
import { answerUsage } from '../usage/usage-query.js';
import { checkUsageQuery } from '../usage/usage-request.js';
import { AuditProjector } from './audit-projector.js';

const at = '2026-11-24T10:00:00.000Z';
const MARKER = 'secret-reason-7f3a';

const conversation = (): RecordedEvent[] => {
  const agent = { agentId: 'support', model: 'openai:gpt-4o-mini', maxSteps: 3 };
  const usage = { model: 'openai:gpt-4o-mini', promptTokens: 10, completionTokens: 2, cacheReadTokens: 0 };
  const datas: Array<[string, object]> = [
    ['UserMessageAdded', { messageId: 'm1', turnId: 't1', content: 'hi', at }],
    ['TurnStarted', { turnId: 't1', agent, role: 'editor', at }],
    ['UsageRecorded', { turnId: 't1', step: 1, ...usage, cacheWriteTokens: 0, costUsd: 0.01, at }],
    [
      'ApprovalDecided',
      { approvalId: 'a1', toolCallId: 'tc1', turnId: 't1', decision: 'deny', reason: MARKER, by: 'k1', at },
    ],
    ['FeedbackGiven', { messageId: 'a2', rating: 'up', agentId: 'support', by: 'ana', comment: MARKER, at }],
    ['FeedbackGiven', { messageId: 'a2', rating: 'down', previous: 'up', agentId: 'support', by: 'ana', at }],
  ];
  return datas.map(([type, data], i) => ({
    eventId: `e${i + 1}`,
    type,
    data,
    metadata: { correlationId: `r${i}`, actor: { keyId: 'k1', role: 'editor', userId: 'ana' } },
    tenantId: 'acme',
    streamName: 'conversation-c1',
    version: i + 1,
    globalPosition: i + 1,
    commitId: `c${i + 1}`,
    recordedAt: at,
  }));
};

const deletion = (position: number): RecordedEvent => ({
  eventId: `e${position}`,
  type: 'ConversationDeleted',
  data: { conversationId: 'c1', by: 'k1', at },
  metadata: { actor: { keyId: 'k1', role: 'admin' } },
  tenantId: 'acme',
  streamName: 'conversation-c1',
  version: position,
  globalPosition: position,
  commitId: `c${position}`,
  recordedAt: at,
});

const usageRows = (storage: InMemoryAuditStorage) =>
  answerUsage(
    storage,
    checkUsageQuery({ tenantId: 'acme', from: '2026-11-24', to: '2026-11-24', groupBy: 'agent' }),
  );

const EXPECTED_ROWS = [
  {
    key: 'support',
    promptTokens: 10,
    completionTokens: 2,
    costUsd: 0.01,
    turns: 1,
    feedbackUp: 0,
    feedbackDown: 1,
  },
];

describe('audit projection of a deleted conversation', () => {
  it('drops the reason from its entries at the deletion; the entries and usage stay', async () => {
    const storage = new InMemoryAuditStorage();
    const projector = new AuditProjector(new InMemoryEventStore(), storage);
    const events = conversation();
    await projector.applyPage(events, events.length);
    await projector.applyPage([deletion(7)], 7);

    const trail = await storage.pageAudit({ tenantId: 'acme', limit: 50 });
    expect(trail.map((e) => e.type).sort()).toEqual(['ApprovalDecided', 'ConversationDeleted']);
    expect(trail.find((e) => e.type === 'ApprovalDecided')?.details).toEqual({
      decision: 'deny',
      toolCallId: 'tc1',
      turnId: 't1',
    });
    expect(JSON.stringify(trail)).not.toContain(MARKER);
    expect((await usageRows(storage)).rows).toEqual(EXPECTED_ROWS);
  });

  it('counts events it reads only after the key is destroyed (erased) by their clear part', async () => {
    const keyring = new DataKeyring(new InMemoryDataKeyStore(), randomBytes(32));
    const sealer = new EventSealer({
      keyring,
      keyStream: (e) => e.streamName,
      erasureType: 'ConversationDeleted',
    });
    const sealed = await sealer.seal('acme', 'conversation-c1', conversation());
    await keyring.destroy('acme', 'conversation-c1');
    const erased = await sealer.openAll(sealed as RecordedEvent[]);
    // Those with content; the usage and the last feedback have none (nothing sealed).
    const types = ['ContentErased', 'ContentErased', 'UsageRecorded', 'ContentErased', 'ContentErased'];
    expect(erased.map((e) => e.type)).toEqual([...types, 'FeedbackGiven']);

    const storage = new InMemoryAuditStorage();
    const projector = new AuditProjector(new InMemoryEventStore(), storage);
    await projector.applyPage([...erased, deletion(7)], 7);

    const trail = await storage.pageAudit({ tenantId: 'acme', limit: 50 });
    expect(trail.map((e) => e.type).sort()).toEqual(['ApprovalDecided', 'ConversationDeleted']);
    expect(JSON.stringify(trail)).not.toContain(MARKER);
    // The turn's agent was in TurnStarted's sealed content (the live projection records it before
    // any deletion): read only after it, the tokens are the unknown agent's.
    expect((await usageRows(storage)).rows).toEqual([
      {
        key: 'unknown',
        promptTokens: 10,
        completionTokens: 2,
        costUsd: 0.01,
        turns: 1,
        feedbackUp: 0,
        feedbackDown: 0,
      },
    ]);
  });
});
