import { mongoUrlFor, uniqueName } from '@keel/testkit';
import { describeEventStoreContract } from '../event-store/event-store.contract.js';
import type { MongoEventStoreOptions } from './mongo-event-store.js';
import { MongoEventStore } from './mongo-event-store.js';

// Both read strategies run here: `walk` is the default on FerretDB, `range` the default on MongoDB.
for (const reads of ['walk', 'range'] as const) {
  describeEventStoreContract(`mongodb, ${reads} reads`, async () => {
    const url = mongoUrlFor(uniqueName('store'));
    const options: MongoEventStoreOptions = { reads };
    // Two clients, as two processes would have: the contract races them against each other.
    const store = await MongoEventStore.connect(url, options);
    const second = await MongoEventStore.connect(url, options);
    return {
      store,
      second,
      cleanup: async () => {
        await store.db.dropDatabase();
        await Promise.all([store.close(), second.close()]);
      },
    };
  });
}
