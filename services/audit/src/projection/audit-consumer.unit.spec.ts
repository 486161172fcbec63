import type { RecordedEvent } from '@keel/core';
import { AppendSignal, InMemoryEventBus } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { AuditConsumer } from './audit-consumer.js';
import type { AuditProjector } from './audit-projector.js';

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

/** A projector that records the targets it is asked to reach. */
const recordingProjector = () => {
  const targets: Array<number | undefined> = [];
  const projector = {
    catchUp: async (target?: number) => {
      targets.push(target);
    },
  } as unknown as AuditProjector;
  return { projector, targets };
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
    const consumer = new AuditConsumer(bus, projector, { store: { read: async () => [] } });
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
    const consumer = new AuditConsumer(bus, projector, { store, placedPollMs: 1 });
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
    const consumer = new AuditConsumer(bus, projector, { store, placed, placedPollMs: 60_000 });
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
    const consumer = new AuditConsumer(bus, projector, { store, placed, placedPollMs: 5 });
    await consumer.start();
    await bus.publish([event()]);
    await expect.poll(() => targets).toEqual([42]);
    expect(reads).toBe(2);
    await consumer.stop();
    await bus.close();
  });
});
