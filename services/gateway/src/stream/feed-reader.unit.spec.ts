import { InMemoryEphemeralChannel, InMemoryEventStore } from '@keel/core';
import { describe, expect, it } from 'vitest';
import type { FeedFrame } from './feed-frames.js';
import { isEphemeralFrame, readFeed } from './feed-reader.js';

const at = '2026-01-01T00:00:00.000Z';
const tenantId = 't1';
const conversationId = 'c1';
const target = { tenantId, conversationId, streamName: `conversation-${conversationId}`, after: 0 };
const topic = { kind: 'deltas' as const, tenantId, conversationId };
const delta = (seq: number) => ({ type: 'delta', turnId: 'u1', step: 1, seq, text: `t${seq}` });

describe('readFeed', () => {
  it('holds at most maxQueuedDeltas for a consumer that stops pulling, dropping the oldest, never a durable event', async () => {
    const store = new InMemoryEventStore();
    const ephemeral = new InMemoryEphemeralChannel();
    const stop = new AbortController();
    const frames = readFeed({ store, ephemeral, pollMs: 5_000, maxQueuedDeltas: 3 }, target, stop.signal);
    await store.append(tenantId, target.streamName, [
      { type: 'TurnStarted', data: { turnId: 'u1', agent: {}, role: 'editor', at } },
    ]);
    const first = await frames.next();
    expect(first.value).toMatchObject({ id: '1', event: 'turn.started' });
    // The consumer holds the first frame and pulls nothing while ten deltas and an event arrive.
    for (let seq = 1; seq <= 10; seq++) ephemeral.publish(topic, delta(seq));
    await store.append(tenantId, target.streamName, [
      { type: 'TurnCompleted', data: { turnId: 'u1', finishReason: 'stop', at } },
    ]);
    const rest: FeedFrame[] = [];
    for (let i = 0; i < 4; i++) rest.push((await frames.next()).value as FeedFrame);
    // The last three deltas (published at version 1), then the durable event appended after them.
    expect(rest.map((f) => f.id)).toEqual(['1.8', '1.9', '1.10', '2']);
    expect(rest.map(isEphemeralFrame)).toEqual([true, true, true, false]);
    stop.abort();
    expect((await frames.next()).done).toBe(true);
  });

  it('yields nothing and subscribes to nothing when the signal is already aborted', async () => {
    const store = new InMemoryEventStore();
    await store.append(tenantId, target.streamName, [
      { type: 'TurnStarted', data: { turnId: 'u1', agent: {}, role: 'editor', at } },
    ]);
    const stop = new AbortController();
    stop.abort();
    const frames = readFeed(
      { store, ephemeral: new InMemoryEphemeralChannel(), pollMs: 10 },
      target,
      stop.signal,
    );
    expect((await frames.next()).done).toBe(true);
  });
});
