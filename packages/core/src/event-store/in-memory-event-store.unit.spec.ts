import { describeEventStoreContract } from './event-store.contract.js';
import { InMemoryEventStore } from './in-memory-event-store.js';

describeEventStoreContract('in-memory', async () => {
  const store = new InMemoryEventStore();
  return { store, second: store, cleanup: () => store.close() };
});
