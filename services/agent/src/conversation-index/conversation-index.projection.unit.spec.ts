// The conversation index kept two ways: at once by ConversationService.create, and by the
// agent-conversation-index consumer from the log, which lists a conversation whose creator died
// before writing the index.
import {
  InMemoryCheckpointStore,
  InMemoryEventBus,
  InMemoryEventStore,
  InMemoryLeaseStore,
  OutboxRelay,
  streamName,
  uuidv7,
} from '@keel/core';
import { eventuallyTrue } from '@keel/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import type { CallContext } from '../call-context.js';
import { ConversationService } from '../conversation/conversation.service.js';
import { TenantConfigService } from '../tenant-config/tenant-config.service.js';
import type { ConversationIndex } from './conversation-index.js';
import { ConversationIndexProjection } from './conversation-index.projection.js';
import { InMemoryConversationIndex } from './in-memory-conversation-index.js';

const silent = { info: () => {}, warn: () => {}, error: () => {} };
const ctx: CallContext = {
  tenantId: 'acme',
  keyId: 'key-1',
  role: 'editor',
  userId: 'ana',
  correlationId: 'req-1',
};

const setup = async (index: ConversationIndex = new InMemoryConversationIndex()) => {
  const store = new InMemoryEventStore();
  const bus = new InMemoryEventBus({ logger: silent });
  const relay = new OutboxRelay({
    store,
    bus,
    checkpoints: new InMemoryCheckpointStore(),
    leases: new InMemoryLeaseStore(),
    idleMs: 5,
  });
  const config = new TenantConfigService(store);
  await config.apply(ctx, {
    type: 'PutAgent',
    agent: {
      agentId: 'support',
      model: 'openai:gpt-test',
      instructions: 'Help.',
      tools: [],
      maxSteps: 4,
      temperature: 0,
      toolResultMaxChars: 2_000,
    },
    at: 'now',
  });
  const indexErrors: unknown[] = [];
  const conversations = new ConversationService(store, bus, config, {
    index,
    onIndexError: (error) => indexErrors.push(error),
  });
  const projection = new ConversationIndexProjection(bus, index);
  const stop = async () => {
    await projection.stop();
    await relay.stop();
    await bus.close();
  };
  return { store, relay, conversations, projection, indexErrors, stop };
};

let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

describe('conversation index', () => {
  it('lists a created conversation at once, newest first, with its status and title', async () => {
    const t = await setup();
    stop = t.stop;
    const first = await t.conversations.create(ctx, { agentId: 'support', title: 'Refund' });
    const second = await t.conversations.create(ctx, { agentId: 'support' });
    expect(await t.conversations.list('acme')).toEqual({
      conversations: [
        { id: second.id, agentId: 'support', userId: 'ana', status: 'idle', createdAt: second.createdAt },
        {
          id: first.id,
          agentId: 'support',
          title: 'Refund',
          userId: 'ana',
          status: 'idle',
          createdAt: first.createdAt,
        },
      ],
    });
    expect(await t.conversations.list('globex')).toEqual({ conversations: [] });
  });

  it('lists, once the consumer catches up, a conversation whose creator died before indexing it', async () => {
    const t = await setup();
    stop = t.stop;
    // What a process that crashed between its append and its index write leaves: only the event.
    const conversationId = uuidv7();
    await t.store.append('acme', streamName('conversation', conversationId), [
      {
        type: 'ConversationCreated',
        data: { conversationId, agentId: 'support', title: 'Orphan', createdAt: '2030-01-01T00:00:00.000Z' },
        metadata: { correlationId: 'req-dead' },
      },
    ]);
    const created = await t.conversations.create(ctx, { agentId: 'support' });
    expect((await t.conversations.list('acme')).conversations.map((c) => c.id)).toEqual([created.id]);

    await t.projection.start();
    t.relay.start();
    await eventuallyTrue(async () => (await t.conversations.list('acme')).conversations.length === 2);
    const { conversations } = await t.conversations.list('acme');
    expect(conversations).toEqual([
      { id: created.id, agentId: 'support', userId: 'ana', status: 'idle', createdAt: created.createdAt },
      {
        id: conversationId,
        agentId: 'support',
        title: 'Orphan',
        status: 'idle',
        createdAt: '2030-01-01T00:00:00.000Z',
      },
    ]);
  });

  it('creates the conversation even when the immediate index write fails; the consumer records it', async () => {
    const memory = new InMemoryConversationIndex();
    let failing = true;
    const flaky: ConversationIndex = {
      record: (entry) => (failing ? Promise.reject(new Error('index down')) : memory.record(entry)),
      update: (entry) => memory.update(entry),
      remove: (tenantId, conversationId) => memory.remove(tenantId, conversationId),
      list: (tenantId, page) => memory.list(tenantId, page),
    };
    const t = await setup(flaky);
    stop = t.stop;
    const created = await t.conversations.create(ctx, { agentId: 'support' });
    expect(t.indexErrors).toHaveLength(1);
    expect((await t.conversations.list('acme')).conversations).toEqual([]);

    failing = false;
    await t.projection.start();
    t.relay.start();
    await eventuallyTrue(async () => (await t.conversations.list('acme')).conversations.length === 1);
    expect((await t.conversations.list('acme')).conversations[0]?.id).toBe(created.id);
  });
});
