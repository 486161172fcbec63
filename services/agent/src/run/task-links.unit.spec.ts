// Which run's task a conversation is, as the run manager asks it on every usage event and turn
// end: each conversation's first event is read once, whatever the answer, and never again.
import type { EventStore, ReadStreamOptions } from '@keel/core';
import { InMemoryEventStore } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { RUN_ID_KEY, TASK_ID_KEY, TaskLinks } from './task-links.js';

const created = (conversationId: string, extra: Record<string, unknown> = {}) => ({
  type: 'ConversationCreated',
  data: { conversationId, agentId: 'a', createdAt: 'now', ...extra },
});

/** The store, counting the reads each stream gets. */
const setup = async () => {
  const inner = new InMemoryEventStore();
  const reads: string[] = [];
  let failNext = false;
  const store: EventStore = Object.assign(Object.create(inner) as EventStore, {
    read: async (tenantId: string, stream: string, options?: ReadStreamOptions) => {
      reads.push(stream);
      if (failNext) {
        failNext = false;
        throw new Error('store unavailable');
      }
      return inner.read(tenantId, stream, options);
    },
  });
  const append = (stream: string, event: ReturnType<typeof created>) => inner.append('acme', stream, [event]);
  await append(
    'conversation-task',
    created('task', { metadata: { [RUN_ID_KEY]: 'r1', [TASK_ID_KEY]: 'r1.0' } }),
  );
  await append('conversation-child', created('child', { parent: { conversationId: 'task' } }));
  await append('conversation-plain', created('plain', { metadata: { topic: 'x' } }));
  return { store, reads, append, failOnce: () => (failNext = true) };
};

describe('the task links of conversations', () => {
  it('reads a conversation’s first event once, task or not', async () => {
    const { store, reads } = await setup();
    const links = new TaskLinks(store);
    for (let i = 0; i < 3; i += 1) {
      expect(await links.taskOf('acme', 'conversation-task')).toEqual({ runId: 'r1', taskId: 'r1.0' });
      expect(await links.taskOf('acme', 'conversation-plain')).toBeUndefined();
    }
    expect(reads).toEqual(['conversation-task', 'conversation-plain']);
  });

  it('finds the task a sub-agent conversation runs under only when asked to go up', async () => {
    const { store, reads } = await setup();
    const links = new TaskLinks(store);
    expect(await links.taskOf('acme', 'conversation-child')).toBeUndefined();
    expect(await links.taskOf('acme', 'conversation-child', 1)).toEqual({ runId: 'r1', taskId: 'r1.0' });
    expect(await links.taskOf('acme', 'conversation-child', 1)).toEqual({ runId: 'r1', taskId: 'r1.0' });
    expect(reads).toEqual(['conversation-child', 'conversation-task']);
  });

  it('shares one read among concurrent lookups', async () => {
    const { store, reads } = await setup();
    const links = new TaskLinks(store);
    await Promise.all([1, 2, 3].map(() => links.taskOf('acme', 'conversation-task')));
    expect(reads).toEqual(['conversation-task']);
  });

  it('reads again after a failed read, and for a stream not created yet', async () => {
    const { store, reads, append, failOnce } = await setup();
    const links = new TaskLinks(store);
    failOnce();
    await expect(links.taskOf('acme', 'conversation-task')).rejects.toThrow('store unavailable');
    expect(await links.taskOf('acme', 'conversation-task')).toEqual({ runId: 'r1', taskId: 'r1.0' });
    expect(await links.taskOf('acme', 'conversation-late')).toBeUndefined();
    await append(
      'conversation-late',
      created('late', { metadata: { [RUN_ID_KEY]: 'r2', [TASK_ID_KEY]: 'r2.0' } }),
    );
    expect(await links.taskOf('acme', 'conversation-late')).toEqual({ runId: 'r2', taskId: 'r2.0' });
    expect(reads).toEqual([
      'conversation-task',
      'conversation-task',
      'conversation-late',
      'conversation-late',
    ]);
  });

  it('keeps tenants apart and forgets the least recently used past its capacity', async () => {
    const { store, reads } = await setup();
    const links = new TaskLinks(store, 2);
    expect(await links.taskOf('other', 'conversation-task')).toBeUndefined();
    await links.taskOf('acme', 'conversation-task');
    await links.taskOf('acme', 'conversation-plain');
    await links.taskOf('acme', 'conversation-task');
    await links.taskOf('acme', 'conversation-child');
    expect(reads).toEqual([
      'conversation-task',
      'conversation-task',
      'conversation-plain',
      'conversation-child',
    ]);
    await links.taskOf('acme', 'conversation-task');
    await links.taskOf('acme', 'conversation-plain');
    expect(reads.slice(4)).toEqual(['conversation-plain']);
  });
});
