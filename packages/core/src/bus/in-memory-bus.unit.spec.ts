import { describe, expect, it } from 'vitest';
import { PreconditionError, UnavailableError } from '../errors/index.js';
import { describeEphemeralContract } from './ephemeral.contract.js';
import { describeEventBusContract } from './event-bus.contract.js';
import { InMemoryEventBus } from './in-memory-bus.js';

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
