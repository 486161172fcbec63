import type { RecordedEvent } from '@keel/core';
import { InMemoryEventBus } from '@keel/core';
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
});
