import type { RecordedEvent } from '@keel/core';
import { InMemoryEphemeralChannel, InMemoryEventBus, InMemoryEventStore, SEALED_FIELD } from '@keel/core';
import { describe, expect, it } from 'vitest';
import type { FeedFrame } from './feed-frames.js';
import { isEphemeralFrame, noticeCallsForRead, openFeedInput, readFeed, untilPoll } from './feed-reader.js';

const at = '2026-01-01T00:00:00.000Z';
const tenantId = 't1';
const conversationId = 'c1';
const target = { tenantId, conversationId, streamName: `conversation-${conversationId}`, after: 0 };
const topic = { kind: 'deltas' as const, tenantId, conversationId };
const delta = (seq: number, version?: number) => ({
  type: 'delta',
  turnId: 'u1',
  step: 1,
  seq,
  text: `t${seq}`,
  ...(version === undefined ? {} : { version }),
});
const started = { type: 'TurnStarted', data: { turnId: 'u1', agent: {}, role: 'editor', at } };
const completed = { type: 'TurnCompleted', data: { turnId: 'u1', finishReason: 'stop', at } };

/**
 * The log as a gateway sees it when another process (the agent) appends: appends wake no reader,
 * and every read is counted.
 */
class OtherProcessStore extends InMemoryEventStore {
  reads = 0;
  override read(...args: Parameters<InMemoryEventStore['read']>) {
    this.reads++;
    return super.read(...args);
  }
  override get appendCount(): number {
    return 0;
  }
  override waitForAppend(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      signal?.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

/** The next `n` frames of a feed. */
const take = async (frames: AsyncGenerator<FeedFrame>, n: number): Promise<FeedFrame[]> => {
  const out: FeedFrame[] = [];
  for (let i = 0; i < n; i++) out.push((await frames.next()).value as FeedFrame);
  return out;
};

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

  it('writes a delta that follows a version already yielded without reading the log', async () => {
    const store = new OtherProcessStore();
    const ephemeral = new InMemoryEphemeralChannel();
    const stop = new AbortController();
    await store.append(tenantId, target.streamName, [started]);
    const frames = readFeed({ store, ephemeral, pollMs: 60_000 }, target, stop.signal);
    expect(await take(frames, 1)).toMatchObject([{ id: '1', event: 'turn.started' }]);
    const readsBefore = store.reads;
    const next = take(frames, 3);
    for (let seq = 1; seq <= 3; seq++) ephemeral.publish(topic, delta(seq, 1));
    expect((await next).map((f) => [f.id, f.event])).toEqual([
      ['1.1', 'message.delta'],
      ['1.2', 'message.delta'],
      ['1.3', 'message.delta'],
    ]);
    expect(store.reads).toBe(readsBefore);
    stop.abort();
    await frames.next();
  });

  it('reads the log first for a delta that is ahead of it, or that names no version (older agents)', async () => {
    for (const version of [2, undefined]) {
      const store = new OtherProcessStore();
      const ephemeral = new InMemoryEphemeralChannel();
      const stop = new AbortController();
      await store.append(tenantId, target.streamName, [started]);
      const frames = readFeed({ store, ephemeral, pollMs: 60_000 }, target, stop.signal);
      await take(frames, 1);
      // Appended by the agent: nothing wakes the reader, and its poll is a minute away.
      await store.append(tenantId, target.streamName, [completed]);
      const readsBefore = store.reads;
      const next = take(frames, 2);
      ephemeral.publish(topic, delta(1, version));
      expect((await next).map((f) => [f.id, f.event])).toEqual([
        ['2', 'turn.completed'],
        ['2.1', 'message.delta'],
      ]);
      expect(store.reads).toBe(readsBefore + 1);
      stop.abort();
      await frames.next();
    }
  });

  it('still reads the log every pollMs while deltas flow', async () => {
    const store = new OtherProcessStore();
    const ephemeral = new InMemoryEphemeralChannel();
    const stop = new AbortController();
    await store.append(tenantId, target.streamName, [started]);
    const frames = readFeed({ store, ephemeral, pollMs: 100 }, target, stop.signal);
    await take(frames, 1);
    await store.append(tenantId, target.streamName, [completed]);
    let seq = 0;
    const flowing = setInterval(() => ephemeral.publish(topic, delta(++seq, 1)), 10);
    try {
      const seen: FeedFrame[] = [];
      const startedAt = Date.now();
      while (!seen.some((f) => f.event === 'turn.completed')) seen.push(...(await take(frames, 1)));
      expect(Date.now() - startedAt).toBeLessThan(1_000);
      expect(seen.filter((f) => f.event === 'message.delta').length).toBeGreaterThan(0);
    } finally {
      clearInterval(flowing);
      stop.abort();
    }
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

  it('reads at once when the bus shows a commit of another process after the last version yielded, long before pollMs', async () => {
    const store = new OtherProcessStore();
    const ephemeral = new InMemoryEphemeralChannel();
    const bus = new InMemoryEventBus();
    const stop = new AbortController();
    const watch = bus.watch.bind(bus);
    const frames = readFeed({ store, ephemeral, pollMs: 60_000, watch }, target, stop.signal);
    const first = frames.next();
    const [turnStarted] = (await store.append(tenantId, target.streamName, [started])).events;
    await bus.publish([turnStarted!]);
    const startedAt = Date.now();
    expect(((await first).value as FeedFrame).event).toBe('turn.started');
    expect(Date.now() - startedAt).toBeLessThan(5_000);
    // A notice of a version already yielded (the relay's republish past the window) reads nothing.
    const reads = store.reads;
    bus.watch({ tenantId, streamName: target.streamName }, () => undefined);
    await bus.publish([{ ...turnStarted!, eventId: 'again' }]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(store.reads).toBe(reads);
    stop.abort();
    await frames.return(undefined);
    await bus.close();
  });

  it('with the bus watch, polls the log every watchedPollMs instead of pollMs (a notice wakes it)', async () => {
    const store = new OtherProcessStore();
    const bus = new InMemoryEventBus();
    const stop = new AbortController();
    const sources = { store, ephemeral: new InMemoryEphemeralChannel(), pollMs: 10, watchedPollMs: 60_000 };
    const frames = readFeed({ ...sources, watch: bus.watch.bind(bus) }, target, stop.signal);
    const first = frames.next();
    await new Promise((resolve) => setTimeout(resolve, 200));
    // The first pass only: no poll every 10 ms while nothing is published.
    expect(store.reads).toBe(1);
    const [turnStarted] = (await store.append(tenantId, target.streamName, [started])).events;
    await bus.publish([turnStarted!]);
    expect(((await first).value as FeedFrame).event).toBe('turn.started');
    // The published event follows the last version yielded (0): yielded as watched, no second read.
    expect(store.reads).toBe(1);
    stop.abort();
    await frames.return(undefined);
    await bus.close();
  });

  it('yields watched events that follow the last version yielded without reading the log, then the deltas after them', async () => {
    const store = new OtherProcessStore();
    const ephemeral = new InMemoryEphemeralChannel();
    const bus = new InMemoryEventBus();
    const stop = new AbortController();
    const frames = readFeed(
      { store, ephemeral, pollMs: 60_000, watch: bus.watch.bind(bus) },
      target,
      stop.signal,
    );
    const first = frames.next();
    await new Promise((resolve) => setTimeout(resolve, 20));
    const committed = (await store.append(tenantId, target.streamName, [started, completed])).events;
    await bus.publish(committed);
    ephemeral.publish(topic, delta(1, 2));
    const seen = [((await first).value as FeedFrame).id, ...(await take(frames, 2)).map((f) => f.id)];
    expect(seen).toEqual(['1', '2', '2.1']);
    expect(store.reads).toBe(1);
    stop.abort();
    await frames.return(undefined);
    await bus.close();
  });

  it('reads the log when watched events leave a gap, or come out of order, and yields each version once', async () => {
    const store = new OtherProcessStore();
    const bus = new InMemoryEventBus();
    const stop = new AbortController();
    const frames = readFeed(
      { store, ephemeral: new InMemoryEphemeralChannel(), pollMs: 60_000, watch: bus.watch.bind(bus) },
      target,
      stop.signal,
    );
    const first = frames.next();
    await new Promise((resolve) => setTimeout(resolve, 20));
    const [v1, v2, v3] = (
      await store.append(tenantId, target.streamName, [
        started,
        { type: 'ConversationUpdated', data: { title: 'a', at } },
        completed,
      ])
    ).events;
    // Version 1's publish is missed; 3 arrives before 2: the reader reads the log for the gap.
    await bus.publish([v3!]);
    await bus.publish([v2!]);
    const seen = [((await first).value as FeedFrame).id, ...(await take(frames, 2)).map((f) => f.id)];
    expect(seen).toEqual(['1', '2', '3']);
    expect(store.reads).toBe(2);
    // The missed one arrives late: already yielded, nothing read, nothing yielded again.
    await bus.publish([v1!]);
    const next = frames.next();
    const [v4] = (
      await store.append(tenantId, target.streamName, [
        { ...started, data: { ...started.data, turnId: 'u2' } },
      ])
    ).events;
    await bus.publish([v4!]);
    expect(((await next).value as FeedFrame).id).toBe('4');
    expect(store.reads).toBe(2);
    stop.abort();
    await frames.return(undefined);
    await bus.close();
  });

  it('reads the log for a watched event still sealed, or of another tenant or stream, never yielding it', async () => {
    const store = new OtherProcessStore();
    let notify: ((event: RecordedEvent) => void) | undefined;
    const watch = (_stream: unknown, onEvent: (event: RecordedEvent) => void) => {
      notify = onEvent;
      return { unsubscribe: () => undefined };
    };
    const stop = new AbortController();
    const frames = readFeed(
      { store, ephemeral: new InMemoryEphemeralChannel(), pollMs: 60_000, watch },
      target,
      stop.signal,
    );
    const first = frames.next();
    await new Promise((resolve) => setTimeout(resolve, 20));
    const [v1] = (await store.append(tenantId, target.streamName, [started])).events;
    notify!({ ...v1!, data: { turnId: 'u1', [SEALED_FIELD]: { v: 1, iv: '', tag: '', data: '' } } });
    expect(((await first).value as FeedFrame).data).toEqual({ turnId: 'u1' });
    expect(store.reads).toBe(2);
    for (const foreign of [{ tenantId: 't2' }, { streamName: 'conversation-c2' }]) {
      const next = frames.next();
      const [event] = (await store.append(tenantId, target.streamName, [completed])).events;
      notify!({ ...event!, ...foreign, data: { turnId: 'theirs', finishReason: 'stop', at } });
      expect(((await next).value as FeedFrame).data).toMatchObject({ turnId: 'u1' });
    }
    expect(store.reads).toBe(4);
    stop.abort();
    await frames.return(undefined);
  });
});

describe('readFeed with an input opened ahead (a turn feed, before its message is submitted)', () => {
  const openAhead = async (store: OtherProcessStore, bus: InMemoryEventBus, stop: AbortSignal) => {
    const sources = {
      store,
      ephemeral: new InMemoryEphemeralChannel(),
      pollMs: 60_000,
      watch: bus.watch.bind(bus),
      ping: () => Promise.resolve(),
    };
    const input = openFeedInput(sources, target, stop);
    await Promise.resolve(); // the ping's answer
    return { sources, input };
  };

  it('yields the events committed after the watch was live from the bus, with no read of the log', async () => {
    const store = new OtherProcessStore();
    const bus = new InMemoryEventBus();
    const stop = new AbortController();
    await store.append(tenantId, target.streamName, [{ type: 'ConversationCreated', data: { at } }]);
    const { sources, input } = await openAhead(store, bus, stop.signal);
    // The submission: the message and its turn, committed and published after the input was live.
    const committed = (await store.append(tenantId, target.streamName, [started])).events;
    await bus.publish(committed);
    const frames = readFeed(sources, { ...target, after: 1 }, stop.signal, {
      input,
      committedAfterLive: true,
    });
    expect((await take(frames, 1)).map((f) => [f.id, f.event])).toEqual([['2', 'turn.started']]);
    expect(store.reads).toBe(0);
    stop.abort();
    await frames.return(undefined);
    await bus.close();
  });

  it('reads the log first when the watch was not confirmed live before the feed began (its round trip unanswered)', async () => {
    const store = new OtherProcessStore();
    const bus = new InMemoryEventBus();
    const stop = new AbortController();
    await store.append(tenantId, target.streamName, [{ type: 'ConversationCreated', data: { at } }]);
    const sources = {
      store,
      ephemeral: new InMemoryEphemeralChannel(),
      pollMs: 60_000,
      watch: bus.watch.bind(bus),
      ping: () => new Promise<void>(() => undefined),
    };
    const input = openFeedInput(sources, target, stop.signal);
    // Committed and never published (as if the server had handled the publish before the watch).
    await store.append(tenantId, target.streamName, [started]);
    const frames = readFeed(sources, { ...target, after: 1 }, stop.signal, {
      input,
      committedAfterLive: true,
    });
    expect((await take(frames, 1)).map((f) => [f.id, f.event])).toEqual([['2', 'turn.started']]);
    expect(store.reads).toBe(1);
    stop.abort();
    await frames.return(undefined);
    await bus.close();
  });

  it("puts deltas right after the event they follow when the turn's events come at once (from the watch, or a read)", async () => {
    const message = { type: 'AssistantMessageCompleted', data: { turnId: 'u1', text: 't1t2', at } };
    const whole = [started, message, completed];
    const expected = [
      ['2', 'turn.started'],
      ['2.1', 'message.delta'],
      ['2.2', 'message.delta'],
      ['3', 'message.completed'],
      ['4', 'turn.completed'],
    ];
    // The turn ran before the reader began: its events wait on the watch, its deltas in the queue.
    const store = new OtherProcessStore();
    const bus = new InMemoryEventBus();
    const stop = new AbortController();
    await store.append(tenantId, target.streamName, [{ type: 'ConversationCreated', data: { at } }]);
    const { sources, input } = await openAhead(store, bus, stop.signal);
    const committed = (await store.append(tenantId, target.streamName, [started])).events;
    await bus.publish(committed);
    sources.ephemeral.publish(topic, delta(1, 2));
    sources.ephemeral.publish(topic, delta(2, 2));
    await bus.publish((await store.append(tenantId, target.streamName, [message, completed])).events);
    const frames = readFeed(sources, { ...target, after: 1 }, stop.signal, {
      input,
      committedAfterLive: true,
    });
    expect((await take(frames, 5)).map((f) => [f.id, f.event])).toEqual(expected);
    expect(store.reads).toBe(0);
    stop.abort();
    await frames.return(undefined);
    await bus.close();
    // No watch: the deltas arrive while the log is read, and the read holds the whole turn.
    const log = new OtherProcessStore();
    const ephemeral = new InMemoryEphemeralChannel();
    await log.append(tenantId, target.streamName, [{ type: 'ConversationCreated', data: { at } }, ...whole]);
    const reading = new AbortController();
    const read = readFeed({ store: log, ephemeral, pollMs: 60_000 }, { ...target, after: 1 }, reading.signal);
    const first = read.next();
    ephemeral.publish(topic, delta(1, 2));
    ephemeral.publish(topic, delta(2, 2));
    const rest = await take(read, 4);
    expect([(await first).value as FeedFrame, ...rest].map((f) => [f.id, f.event])).toEqual(expected);
    reading.abort();
    await read.return(undefined);
  });

  it('reads the log after a short grace when nothing comes on the watch, and at once for a replayed turn', async () => {
    for (const committedAfterLive of [true, false]) {
      const store = new OtherProcessStore();
      const bus = new InMemoryEventBus();
      const stop = new AbortController();
      const { sources, input } = await openAhead(store, bus, stop.signal);
      // Committed, but its publish lost (or long before: a replayed turn).
      await store.append(tenantId, target.streamName, [started]);
      const startedAt = Date.now();
      const frames = readFeed(sources, target, stop.signal, { input, committedAfterLive });
      expect((await take(frames, 1)).map((f) => f.id)).toEqual(['1']);
      expect(store.reads).toBe(1);
      const waited = Date.now() - startedAt;
      if (committedAfterLive) expect(waited).toBeGreaterThanOrEqual(90);
      else expect(waited).toBeLessThan(90);
      stop.abort();
      await frames.return(undefined);
      await bus.close();
    }
  });

  it('stops its subscriptions when stopped before any reader took it', async () => {
    const store = new OtherProcessStore();
    const bus = new InMemoryEventBus();
    const stop = new AbortController();
    const { input } = await openAhead(store, bus, stop.signal);
    stop.abort();
    await bus.publish((await store.append(tenantId, target.streamName, [started])).events);
    expect(input.watched.size).toBe(0);
    await bus.close();
  });
});

describe('untilPoll', () => {
  it('rounds the wait up to a tenth of the interval, at most 100 ms, never below 0', () => {
    expect(untilPoll(4_913, 5_000)).toBe(5_000);
    expect(untilPoll(4_801, 5_000)).toBe(4_900);
    expect(untilPoll(231, 250)).toBe(250);
    expect(untilPoll(3, 10)).toBe(3);
    expect(untilPoll(-7, 250)).toBe(0);
  });
});

describe('noticeCallsForRead', () => {
  it('asks for a read only for a version after the last one yielded', () => {
    expect(noticeCallsForRead(5, 4)).toBe(true);
    expect(noticeCallsForRead(4, 4)).toBe(false);
    expect(noticeCallsForRead(3, 4)).toBe(false);
    expect(noticeCallsForRead(undefined, 4)).toBe(false);
  });
});
