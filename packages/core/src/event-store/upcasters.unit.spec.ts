import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../typing/index.js';
import { InMemoryEventStore } from './in-memory-event-store.js';
import { Upcasters, upcastingReads } from './upcasters.js';

const recorded = (type: string, data: Record<string, unknown>): RecordedEvent => ({
  eventId: `e-${type}`,
  type,
  data,
  metadata: {},
  tenantId: 'acme',
  streamName: 'order-1',
  version: 1,
  commitId: 'c1',
  recordedAt: '2026-01-02T03:04:05.000Z',
});

describe('upcasters', () => {
  it('lifts the events of a registered type, in registration order, and leaves the rest as they are', () => {
    const upcasters = new Upcasters()
      .register('Placed', (e) => ({ ...e, data: { ...(e.data as object), currency: 'EUR' } }))
      .register('Placed', (e) => {
        const { total, ...rest } = e.data as { total?: number };
        return total === undefined ? e : { ...e, data: { ...rest, amount: { total } } };
      });
    const other = recorded('Shipped', { carrier: 'x' });
    const [placed, shipped] = upcasters.upcastAll([recorded('Placed', { total: 3 }), other]);
    expect(placed!.data).toEqual({ currency: 'EUR', amount: { total: 3 } });
    expect(shipped).toBe(other);
  });

  it('answers an event as it is when no upcaster is registered for its type', () => {
    const event = recorded('Placed', { total: 3 });
    expect(new Upcasters().upcast(event)).toBe(event);
  });
});

describe('upcastingReads', () => {
  it('lifts what read and readAll return and what commit listeners are told; appends and the rest stay the store', async () => {
    const inner = new InMemoryEventStore();
    const store = upcastingReads(
      inner,
      new Upcasters().register('Placed', (e) => ({ ...e, data: { ...(e.data as object), currency: 'EUR' } })),
    );
    const told: unknown[] = [];
    const stop = store.onCommitted((events) => told.push(...events.map((e) => e.data)));
    await store.append('acme', 'order-1', [
      { type: 'Placed', data: { total: 3 } },
      { type: 'Shipped', data: {} },
    ]);
    stop();
    expect(told).toEqual([{ total: 3, currency: 'EUR' }, {}]);
    expect((await store.read('acme', 'order-1')).map((e) => e.data)).toEqual([
      { total: 3, currency: 'EUR' },
      {},
    ]);
    const page = await store.readAll({ scope: 'all-tenants' });
    expect(page.events.map((e) => e.data)).toEqual([{ total: 3, currency: 'EUR' }, {}]);
    expect((await inner.read('acme', 'order-1'))[0]!.data).toEqual({ total: 3 });
    expect(store).toBeInstanceOf(InMemoryEventStore);
    expect(store.appendCount).toBe(1);
    // The store's own methods are bound once, not on every access.
    expect(store.append).toBe(store.append);
  });
});
