import { InMemoryEventStore } from '@keel/core';
import { describe, expect, it } from 'vitest';
import type { FeedFrame } from './feed-frames.js';
import { readLogFeed } from './log-feed.js';

const at = '2026-01-01T00:00:00.000Z';
const started = (turnId: string) => ({
  type: 'TurnStarted',
  data: { turnId, agent: {}, role: 'editor', at },
});
const completed = (turnId: string) => ({ type: 'TurnCompleted', data: { turnId, finishReason: 'stop', at } });
const created = { type: 'ConversationCreated', data: { conversationId: 'x', agentId: 'a', createdAt: at } };

/** The next `n` frames of a feed. */
const take = async (frames: AsyncGenerator<FeedFrame>, n: number): Promise<FeedFrame[]> => {
  const out: FeedFrame[] = [];
  for (let i = 0; i < n; i++) out.push((await frames.next()).value as FeedFrame);
  return out;
};

describe('readLogFeed (the tenant and operator events feeds)', () => {
  it('yields a scope’s conversation frames in log order, ids the global positions, then live ones', async () => {
    const store = new InMemoryEventStore();
    await store.append('acme', 'conversation-c1', [created, started('u1')]);
    await store.append('globex', 'conversation-c2', [started('g1')]);
    await store.append('acme', 'tenants-x', [{ type: 'Other', data: {} }]);
    const stop = new AbortController();
    const feed = readLogFeed({ store, pollMs: 10_000 }, { tenantId: 'acme' }, 0, stop.signal);
    const [first] = await take(feed, 1);
    expect(first).toEqual({
      id: '2',
      event: 'turn.started',
      data: { turnId: 'u1', conversationId: 'c1', tenantId: 'acme' },
    });
    // A live append in this process wakes the feed at once (the poll is 10 s).
    const next = take(feed, 1);
    await store.append('acme', 'conversation-c1', [completed('u1')]);
    expect(await next).toEqual([
      {
        id: '5',
        event: 'turn.completed',
        data: { turnId: 'u1', finishReason: 'stop', affected: [], conversationId: 'c1', tenantId: 'acme' },
      },
    ]);
    stop.abort();
    expect((await feed.next()).done).toBe(true);
  });

  it('resumes after a position with no gap and no duplicate; all tenants when asked', async () => {
    const store = new InMemoryEventStore();
    for (let i = 1; i <= 5; i++) {
      await store.append(i % 2 ? 'acme' : 'globex', `conversation-c${i}`, [started(`u${i}`)]);
    }
    const stop = new AbortController();
    const all = await take(readLogFeed({ store, pollMs: 10 }, 'all-tenants', 2, stop.signal), 3);
    expect(all.map((frame) => [frame.id, (frame.data as { tenantId: string }).tenantId])).toEqual([
      ['3', 'acme'],
      ['4', 'globex'],
      ['5', 'acme'],
    ]);
    const acme = await take(readLogFeed({ store, pollMs: 10 }, { tenantId: 'acme' }, 1, stop.signal), 2);
    expect(acme.map((frame) => frame.id)).toEqual(['3', '5']);
    stop.abort();
  });
});
