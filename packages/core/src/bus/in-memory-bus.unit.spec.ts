import { describeEventBusContract } from './event-bus.contract.js';
import { InMemoryEventBus } from './in-memory-bus.js';

const silent = { warn: () => {}, error: () => {} };

describeEventBusContract('in-memory', async ({ duplicateWindowMs }) => {
  const bus = new InMemoryEventBus({ duplicateWindowMs, logger: silent });
  return { bus, cleanup: () => bus.close() };
});
