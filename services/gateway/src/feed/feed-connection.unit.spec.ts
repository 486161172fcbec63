import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { EphemeralMessage, EphemeralScope, EphemeralSubscription } from '@keel/core';
import { InMemoryEphemeralChannel, InMemoryEventStore } from '@keel/core';
import { createLogger } from '@keel/runtime';
import { afterEach, describe, expect, it } from 'vitest';
import type { FeedSettings } from './feed-connection.js';
import { FeedConnection } from './feed-connection.js';
import { readFeed } from './feed-reader.js';

const at = '2026-01-01T00:00:00.000Z';
const tenantId = 't1';
const conversationId = 'c1';
const streamName = `conversation-${conversationId}`;
const topic = { kind: 'deltas' as const, tenantId, conversationId };
const silent = createLogger('gateway', { level: 'silent' });

/** A response that records what is written and reports a settable write-buffer size. */
class FakeResponse extends EventEmitter {
  chunks: string[] = [];
  status = 0;
  writableEnded = false;
  writableLength = 0;
  destroyed = false;
  socket: { destroyed: boolean } | null = { destroyed: false };
  writeHead(status: number): this {
    this.status = status;
    return this;
  }
  flushHeaders(): void {}
  write(chunk: string): boolean {
    this.chunks.push(chunk);
    return true;
  }
  end(): this {
    this.writableEnded = true;
    return this;
  }
  /** The ids and names of the frames written so far. */
  get frames(): string[] {
    return this.chunks
      .filter((c) => c.startsWith('id: '))
      .map((c) => {
        const [id, event] = c.split('\n');
        return `${id!.slice(4)} ${event!.slice(7)}`;
      });
  }
}

/** The in-memory channel, counting live subscriptions. */
class CountingChannel extends InMemoryEphemeralChannel {
  live = 0;
  override subscribe(scope: EphemeralScope, handler: (m: EphemeralMessage) => void): EphemeralSubscription {
    const inner = super.subscribe(scope, handler);
    this.live++;
    let done = false;
    return {
      unsubscribe: () => {
        if (!done) this.live--;
        done = true;
        inner.unsubscribe();
      },
    };
  }
}

const settings: FeedSettings = { heartbeatMs: 20, pollMs: 5_000, maxBufferedBytes: 1_000 };
const until = async (check: () => boolean, timeoutMs = 2_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};

describe('FeedConnection', () => {
  let store: InMemoryEventStore;
  let channel: CountingChannel;
  let response: FakeResponse;
  let running: Promise<void> | undefined;

  const start = (after = 0) => {
    const sources = { store, ephemeral: channel, pollMs: settings.pollMs };
    const target = { tenantId, conversationId, streamName, after };
    const connection = new FeedConnection((signal) => readFeed(sources, target, signal), settings, silent, {
      tenantId,
      conversationId,
    });
    running = connection.run(response as unknown as ServerResponse, { 'x-request-id': 'r1' });
    return connection;
  };

  const turn = (turnId: string) => [
    { type: 'TurnStarted', data: { turnId, agent: {}, role: 'editor', at } },
    { type: 'TurnCompleted', data: { turnId, finishReason: 'stop', at } },
  ];

  afterEach(async () => {
    response.emit('close');
    await running;
  });

  it('sends the log after `after`, then appends of this process at once (no poll wait), each version once', async () => {
    store = new InMemoryEventStore();
    channel = new CountingChannel();
    response = new FakeResponse();
    await store.append(tenantId, streamName, [
      { type: 'ConversationCreated', data: { conversationId, agentId: 'a', createdAt: at } },
      ...turn('u1'),
    ]);
    start(1);
    await until(() => response.frames.length === 2);
    await store.append(tenantId, streamName, turn('u2'));
    await until(() => response.frames.length === 4);
    expect(response.status).toBe(200);
    expect(response.frames).toEqual([
      '2 turn.started',
      '3 turn.completed',
      '4 turn.started',
      '5 turn.completed',
    ]);
  });

  it('sends deltas after the durable events already in the log when they arrived, as version.seq', async () => {
    store = new InMemoryEventStore();
    channel = new CountingChannel();
    response = new FakeResponse();
    start();
    await until(() => channel.live === 1);
    // Appended and published with no wait: the delta still follows the TurnStarted it belongs to.
    await store.append(tenantId, streamName, turn('u1').slice(0, 1));
    channel.publish(topic, { type: 'delta', turnId: 'u1', step: 1, seq: 1, text: 'a' });
    await until(() => response.frames.length === 2);
    expect(response.frames).toEqual(['1 turn.started', '1.1 message.delta']);
  });

  it('drops deltas, never durable events, while the client is slow', async () => {
    store = new InMemoryEventStore();
    channel = new CountingChannel();
    response = new FakeResponse();
    start();
    await until(() => channel.live === 1);
    response.writableLength = 5_000;
    channel.publish(topic, { type: 'delta', turnId: 'u1', step: 1, seq: 1, text: 'lost' });
    await store.append(tenantId, streamName, turn('u1'));
    await until(() => response.frames.length === 2);
    response.writableLength = 0;
    channel.publish(topic, { type: 'delta', turnId: 'u1', step: 1, seq: 2, text: 'kept' });
    await until(() => response.frames.length === 3);
    expect(response.frames).toEqual(['1 turn.started', '2 turn.completed', '2.2 message.delta']);
  });

  it('writes heartbeats, and on disconnect unsubscribes, stops the timer and the loop', async () => {
    store = new InMemoryEventStore();
    channel = new CountingChannel();
    response = new FakeResponse();
    start();
    await until(() => response.chunks.includes(': ping\n\n'));
    expect(channel.live).toBe(1);
    response.emit('close');
    await running;
    expect(channel.live).toBe(0);
    expect(response.writableEnded).toBe(true);
    const written = response.chunks.length;
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(response.chunks.length).toBe(written);
  });

  it('stops at once when the client left before the stream started', async () => {
    store = new InMemoryEventStore();
    channel = new CountingChannel();
    response = new FakeResponse();
    response.destroyed = true;
    response.socket = null;
    await store.append(tenantId, streamName, turn('u1'));
    start();
    await running;
    expect(channel.live).toBe(0);
    expect(response.frames).toEqual([]);
  });
});
