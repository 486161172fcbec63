import { describe, expect, it, vi } from 'vitest';
import { PreconditionError, UnavailableError } from '../errors/index.js';
import { describeEphemeralContract } from './ephemeral.contract.js';
import { describeEventBusContract } from './event-bus.contract.js';
import { event, recordingConsumer } from './event-bus.contract-support.js';
import { mayBeHandled } from './handle-delivery.js';
import { InMemoryEventBus } from './in-memory-bus.js';
import { InMemoryInbox } from './in-memory-inbox.js';

const silent = { warn: () => {}, error: () => {} };

describeEventBusContract('in-memory', async ({ duplicateWindowMs }) => {
  const bus = new InMemoryEventBus({ duplicateWindowMs, logger: silent });
  return { bus, cleanup: () => bus.close() };
});

describe('in-memory bus lifecycle', () => {
  it('after close it refuses publishes and consumers, and ping reports it unavailable', async () => {
    const bus = new InMemoryEventBus({ logger: silent });
    await expect(bus.ping()).resolves.toBeUndefined();
    await bus.close();
    await expect(bus.ping()).rejects.toBeInstanceOf(UnavailableError);
    await expect(bus.publish([])).rejects.toBeInstanceOf(PreconditionError);
    await expect(bus.consume({ name: 'late' }, async () => {})).rejects.toBeInstanceOf(PreconditionError);
  });
});

describeEphemeralContract('in-memory', async () => {
  const bus = new InMemoryEventBus({ logger: silent });
  return { bus, cleanup: () => bus.close() };
});

describe('inbox round trips', () => {
  /** An inbox that counts what it is asked. */
  const countingInbox = () => {
    const inner = new InMemoryInbox();
    const asked: string[] = [];
    return {
      asked,
      has: (consumer: string, eventId: string) => {
        asked.push(`has ${eventId}`);
        return inner.has(consumer, eventId);
      },
      record: (consumer: string, eventId: string) => {
        asked.push(`record ${eventId}`);
        return inner.record(consumer, eventId);
      },
    };
  };

  it('a first delivery of a fresh event only records it; a redelivery and an old event ask first', async () => {
    const inbox = countingInbox();
    const bus = new InMemoryEventBus({ inbox, duplicateWindowMs: 60_000, logger: silent });
    let failures = 1;
    const handled = await recordingConsumer(bus, { name: 'inboxed', backoffMs: [10] }, (d) => {
      if (d.event.version === 2 && failures-- > 0) throw new Error('once');
    });
    const fresh = event('tn_inbox', 'order-a', 1);
    const failingOnce = event('tn_inbox', 'order-a', 2);
    const old = {
      ...event('tn_inbox', 'order-a', 3),
      recordedAt: new Date(Date.now() - 31_000).toISOString(),
    };
    await bus.publish([fresh, failingOnce, old]);
    await vi.waitFor(() => expect(handled.handledIds()).toHaveLength(3), { timeout: 5_000, interval: 10 });
    // In order (one in flight): the fresh event, the failing one's first delivery (no read, no
    // record), its redelivery, the old event.
    await vi.waitFor(() => expect(inbox.asked).toHaveLength(5), { timeout: 5_000, interval: 10 });
    expect(inbox.asked).toEqual([
      `record ${fresh.eventId}`,
      `has ${failingOnce.eventId}`,
      `record ${failingOnce.eventId}`,
      `has ${old.eventId}`,
      `record ${old.eventId}`,
    ]);
    await bus.close();
  });

  it('asks the inbox for a first delivery only when the event may be a late duplicate', () => {
    const now = Date.parse('2030-01-01T00:01:00Z');
    const at = (iso: string, deliveryCount = 1, replayOf?: string) => ({
      event: { ...event('tn_inbox', 'order-a', 1), recordedAt: iso },
      deliveryCount,
      ...(replayOf === undefined ? {} : { replayOf }),
    });
    expect(mayBeHandled(at('2030-01-01T00:00:31Z'), 60_000, now)).toBe(false);
    expect(mayBeHandled(at('2030-01-01T00:00:30Z'), 60_000, now)).toBe(true);
    expect(mayBeHandled(at('2030-01-01T00:00:59Z', 2), 60_000, now)).toBe(true);
    expect(mayBeHandled(at('2030-01-01T00:00:59Z', 1, 'dl-1'), 60_000, now)).toBe(true);
    expect(mayBeHandled(at('2030-01-01T00:00:59Z'), undefined, now)).toBe(true);
    expect(mayBeHandled(at('not a date'), 60_000, now)).toBe(true);
  });
});
