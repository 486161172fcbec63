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
import type { IndexEntrySource } from './conversation-index.projection.js';
import { ConversationIndexProjection } from './conversation-index.projection.js';
import { InMemoryConversationIndex } from './in-memory-conversation-index.js';
import { indexEntrySource } from './index-entry-source.js';

const silent = { info: () => {}, warn: () => {}, error: () => {} };
const ctx: CallContext = {
  tenantId: 'acme',
  keyId: 'key-1',
  role: 'editor',
  userId: 'ana',
  correlationId: 'req-1',
};

/** The index's updates, counted. */
class CountingIndex extends InMemoryConversationIndex {
  updates = 0;
  override update(entry: Parameters<ConversationIndex['update']>[0]): Promise<void> {
    this.updates += 1;
    return super.update(entry);
  }
}

const setup = async (
  index: ConversationIndex = new InMemoryConversationIndex(),
  withSource?: { writeDelayMs: number },
) => {
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
  // The conversation service's entries, with the reads of the log (loads) counted.
  const served = indexEntrySource(conversations);
  const loads: string[] = [];
  const source: IndexEntrySource = {
    remembered: served.remembered,
    load: (tenantId, conversationId) => {
      loads.push(conversationId);
      return served.load(tenantId, conversationId);
    },
  };
  const projection = withSource
    ? new ConversationIndexProjection(bus, index, source, withSource)
    : new ConversationIndexProjection(bus, index);
  const stop = async () => {
    await projection.stop();
    await relay.stop();
    await bus.close();
  };
  return { store, relay, conversations, projection, indexErrors, loads, stop };
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

  it("follows a turn's status and a title with no read of the log when this process wrote the events, in one write", async () => {
    const index = new CountingIndex();
    const t = await setup(index, { writeDelayMs: 300 });
    stop = t.stop;
    const created = await t.conversations.create(ctx, { agentId: 'support' });
    await t.conversations.update(ctx, created.id, { title: 'Refunds' });
    await t.conversations.send(ctx, created.id, { content: 'Where is my refund?' });
    const running = (await t.conversations.get('acme', created.id)).version;
    await t.conversations.cancel(ctx, created.id);

    // The consumer handles the events after the commands that wrote them (as it may, lagging).
    await t.projection.start();
    t.relay.start();

    await eventuallyTrue(async () => (await index.list('acme')).conversations[0]?.version === running + 1);
    expect((await index.list('acme')).conversations).toEqual([
      expect.objectContaining({ conversationId: created.id, title: 'Refunds', status: 'idle' }),
    ]);
    expect(t.loads).toEqual([]);
    expect(index.updates).toBe(1);
  });

  it('reads the log for an event another process wrote, and lists the conversation as it is now', async () => {
    const index = new InMemoryConversationIndex();
    const t = await setup(index, { writeDelayMs: 0 });
    stop = t.stop;
    const created = await t.conversations.create(ctx, { agentId: 'support' });
    await t.projection.start();
    t.relay.start();
    // What another agent instance's PATCH leaves: an event this process does not hold.
    await t.store.append('acme', streamName('conversation', created.id), [
      {
        type: 'ConversationUpdated',
        data: { title: 'Written elsewhere', by: 'bo', at: '2030-01-01T00:00:00.000Z' },
        metadata: { correlationId: 'req-other' },
      },
    ]);

    // Asked of the index itself: a list through the service would read the log (and hold the event).
    await eventuallyTrue(
      async () => (await index.list('acme')).conversations[0]?.title === 'Written elsewhere',
    );
    expect(t.loads).toEqual([created.id]);
  });
});
