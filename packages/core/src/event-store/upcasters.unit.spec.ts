import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../typing/index.js';
import { Upcasters } from './upcasters.js';

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
