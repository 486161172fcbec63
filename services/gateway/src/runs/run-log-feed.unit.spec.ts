import { InMemoryEventStore } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { readLogFeed } from '../feed/log-feed.js';

describe("a run's events on the tenant's events feed (GET /v1/events)", () => {
  it('yields them with their runId, in log order with the conversations’ events', async () => {
    const store = new InMemoryEventStore();
    const at = '2026-11-24T03:00:00.000Z';
    await store.append('acme', 'run-r1', [
      { type: 'RunCancelled', data: { runId: 'r1', at } },
      { type: 'RunIndexedElsewhere', data: {} },
    ]);
    await store.append('acme', 'conversation-c1', [{ type: 'TurnStarted', data: { turnId: 't1', at } }]);
    const stop = new AbortController();
    const feed = readLogFeed({ store, pollMs: 10_000 }, { tenantId: 'acme' }, 0, stop.signal);
    const first = (await feed.next()).value;
    const second = (await feed.next()).value;
    stop.abort();
    expect(first).toEqual({ id: '1', event: 'run.cancelled', data: { runId: 'r1', tenantId: 'acme' } });
    expect(second).toEqual({
      id: '3',
      event: 'turn.started',
      data: { turnId: 't1', conversationId: 'c1', tenantId: 'acme' },
    });
  });
});
