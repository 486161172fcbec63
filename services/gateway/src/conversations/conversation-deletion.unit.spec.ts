import type { RecordedEvent } from '@keel/core';
import { NotFoundError } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { childConversationsOf, decideDeletion, runOfConversation } from './conversation-deletion.js';

const at = (version: number, type: string, data: unknown = {}): RecordedEvent => ({
  eventId: `e${version}`,
  type,
  data,
  metadata: {},
  tenantId: 'acme',
  streamName: 'conversation-c1',
  version,
  commitId: `c${version}`,
  recordedAt: '2026-01-01T00:00:00Z',
});

const command = {
  conversationId: 'c1',
  by: 'key-1',
  at: '2026-01-02T00:00:00Z',
  metadata: { correlationId: 'r1', actor: { keyId: 'key-1', role: 'editor', userId: 'key-1' } },
};

describe('decideDeletion', () => {
  it('deletes a live conversation, expecting its last version; the event holds ids and times only', () => {
    const decision = decideDeletion([at(1, 'ConversationCreated'), at(2, 'UserMessageAdded')], command);
    expect(decision).toEqual({
      expectedVersion: 2,
      event: {
        type: 'ConversationDeleted',
        data: { conversationId: 'c1', by: 'key-1', at: '2026-01-02T00:00:00Z' },
        metadata: command.metadata,
      },
    });
  });

  it("names the child conversations of the conversation's sub-agent calls, once each", () => {
    const events = [
      at(1, 'ConversationCreated'),
      at(2, 'ToolCallRequested', { toolCallId: 't1', childConversationId: 'k1' }),
      at(3, 'ToolCallRequested', { toolCallId: 't2' }),
      at(4, 'ChildApprovalRequested', { childConversationId: 'k1' }),
      at(5, 'ContentErased', { childConversationId: 'k2', erasedType: 'ToolCallRequested' }),
    ];
    expect(childConversationsOf(events)).toEqual(['k1', 'k2']);
  });

  it('answers not found for no stream (unknown, another tenant), one deleted, and one erased', () => {
    for (const events of [
      [],
      [at(1, 'ConversationCreated'), at(2, 'ConversationDeleted')],
      [at(1, 'ContentErased', { erasedType: 'ConversationCreated' })],
    ]) {
      expect(() => decideDeletion(events, command)).toThrow(NotFoundError);
    }
  });

  it('names the team run a task conversation belongs to (its creation metadata), none otherwise', () => {
    const created = (metadata: unknown) => [at(1, 'ConversationCreated', { agentId: 'a', metadata })];
    expect(runOfConversation(created({ keel_run_id: 'r1', keel_task_id: 't1' }))).toBe('r1');
    expect(runOfConversation(created({ siteName: 'x' }))).toBeUndefined();
    expect(runOfConversation(created(undefined))).toBeUndefined();
    expect(runOfConversation([])).toBeUndefined();
  });
});
