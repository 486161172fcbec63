import { uuidv7 } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { describeConversationIndexContract } from './conversation-index.contract.js';
import { InMemoryConversationIndex } from './in-memory-conversation-index.js';

describeConversationIndexContract('in memory', () => Promise.resolve(new InMemoryConversationIndex()));

describe('in-memory conversation index', () => {
  it('keeps what was recorded, whatever the caller does with its objects afterwards', async () => {
    const index = new InMemoryConversationIndex();
    const entry = { tenantId: 'acme', conversationId: uuidv7(), agentId: 'support', createdAt: 'now' };
    await index.record(entry);
    entry.agentId = 'changed';
    const [listed] = (await index.list('acme')).conversations;
    (listed as { agentId: string }).agentId = 'changed again';
    expect((await index.list('acme')).conversations[0]?.agentId).toBe('support');
  });
});
