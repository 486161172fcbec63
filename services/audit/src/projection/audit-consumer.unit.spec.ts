import type { RecordedEvent } from '@keel/core';
import { AppendSignal, InMemoryEventBus, InMemoryEventStore } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { AuditConsumer } from './audit-consumer.js';
import { InMemoryAuditStorage } from '../storage/in-memory-audit-storage.js';
import { AuditProjector } from './audit-projector.js';

const event = (globalPosition?: number): RecordedEvent => ({
  eventId: '0192f1c2-0000-7000-8000-0000000000e1',
  type: 'UsageRecorded',
  data: {},
  metadata: {},
  tenantId: 'acme',
  streamName: 'conversation-c1',
  version: 3,
  ...(globalPosition === undefined ? {} : { globalPosition }),
  commitId: 'c',
  recordedAt: '2026-01-01T00:00:00.000Z',
});

/**
 * A projector that records the targets it is asked to reach, and the catch-ups that had work to
 * do (it reaches `logEnd`, as the real one reads on to the end of the log).
 */
const recordingProjector = (logEnd: () => number = () => 0) => {
  const targets: Array<number | undefined> = [];
  let behind = 0;
  const stats = { position: 0 };
  const projector = {
    stats,
    positionOf: () => undefined,
    catchUp: async (target?: number) => {
      targets.push(target);
      if (target === undefined || target > stats.position) behind++;
      stats.position = Math.max(stats.position, target ?? 0, logEnd());
    },
  } as unknown as AuditProjector;
  return { projector, targets, behind: () => behind };
};

/** A relay's notices of placed pages, driven by the test. */
const toldPages = () => {
  const signal = new AppendSignal();
  const positions = new Map<string, number>();
  return {
    tell: (eventId: string, position: number) => {
      positions.set(eventId, position);
      signal.notify();
    },
    placed: {
      positionOf: (eventId: string) => positions.get(eventId),
      get placedCount() {
        return signal.count;
      },
      waitForPlaced: (ms: number, since?: number) => signal.wait(ms, undefined, since),
    },
  };
};

describe('AuditConsumer', () => {
  it('catches up to the position the event carries', async () => {
    const bus = new InMemoryEventBus();
    const { projector, targets } = recordingProjector();
    const consumer = new AuditConsumer(bus, projector, { store: { read: async () => [] }, batchMs: 0 });
    await consumer.start();
    await bus.publish([event(7)]);
    await expect.poll(() => targets).toEqual([7]);
    await consumer.stop();
    await bus.close();
  });

  it('an event published before it was placed (the fast path) waits for its position in the log, then catches up to it', async () => {
    const bus = new InMemoryEventBus();
    const { projector, targets } = recordingProjector();
    let reads = 0;
    // Placed at the third look.
    const store = { read: async () => [event(++reads >= 3 ? 42 : undefined)] };
    const consumer = new AuditConsumer(bus, projector, { store, placedPollMs: 1, batchMs: 0 });
    await consumer.start();
    await bus.publish([event()]);
    await expect.poll(() => targets).toEqual([42]);
    expect(reads).toBe(3);
    await consumer.stop();
    await bus.close();
  });

  it("an event whose page its placer told (over the relay's notices) catches up to it without reading the log", async () => {
    const bus = new InMemoryEventBus();
    const { projector, targets } = recordingProjector();
    let reads = 0;
    const store = {
      read: async () => {
        reads++;
        return [event()];
      },
    };
    const { tell, placed } = toldPages();
    const consumer = new AuditConsumer(bus, projector, { store, placed, placedPollMs: 60_000, batchMs: 0 });
    await consumer.start();
    await bus.publish([event()]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(targets).toEqual([]);
    tell(event().eventId, 42);
    await expect.poll(() => targets).toEqual([42]);
    expect(reads).toBe(0);
    await consumer.stop();
    await bus.close();
  });

  it('an event whose page is never told (a notice lost) is found in the log a poll later', async () => {
    const bus = new InMemoryEventBus();
    const { projector, targets } = recordingProjector();
    let reads = 0;
    const store = { read: async () => [event(++reads >= 2 ? 42 : undefined)] };
    const { placed } = toldPages();
    const consumer = new AuditConsumer(bus, projector, { store, placed, placedPollMs: 5, batchMs: 0 });
    await consumer.start();
    await bus.publish([event()]);
    await expect.poll(() => targets).toEqual([42]);
    expect(reads).toBe(2);
    await consumer.stop();
    await bus.close();
  });

  it('events committed within the batch wait are projected by one catch-up: the first delivery waits, the rest find it done', async () => {
    const bus = new InMemoryEventBus();
    let committed = 0;
    const { projector, targets, behind } = recordingProjector(() => committed);
    const consumer = new AuditConsumer(bus, projector, { store: { read: async () => [] }, batchMs: 100 });
    await consumer.start();
    for (const position of [1, 2, 3]) {
      committed = position;
      const eventId = `0192f1c2-0000-7000-8000-00000000000${position}`;
      await bus.publish([{ ...event(position), eventId, version: position }]);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await expect.poll(() => targets).toEqual([1, 2, 3]);
    // Without the wait each delivery would find the projection behind it (3 catch-ups with work).
    expect(behind()).toBe(1);
    await consumer.stop();
    await bus.close();
  });

  it('a redelivered event the projection already applied is caught up to with no notice and no read of the log', async () => {
    const log = new InMemoryEventStore();
    const { events } = await log.append('acme', 'conversation-c1', [{ type: 'UserMessageAdded', data: {} }]);
    const projector = new AuditProjector(log, new InMemoryAuditStorage());
    await projector.catchUp();
    const targets: Array<number | undefined> = [];
    const catchUp = projector.catchUp.bind(projector);
    projector.catchUp = (target) => {
      targets.push(target);
      return catchUp(target);
    };
    let reads = 0;
    const store = {
      read: async () => {
        reads++;
        return [];
      },
    };
    const bus = new InMemoryEventBus();
    const { placed } = toldPages();
    const consumer = new AuditConsumer(bus, projector, { store, placed, placedPollMs: 60_000, batchMs: 0 });
    await consumer.start();
    // As the fast path published it: no position.
    const { globalPosition: _position, ...published } = events[0]!;
    await bus.publish([published]);
    await expect.poll(() => targets).toEqual([1]);
    expect(reads).toBe(0);
    await consumer.stop();
    await bus.close();
  });
});
