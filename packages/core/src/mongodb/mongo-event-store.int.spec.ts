import { mongoUrlFor, uniqueName } from '@keel/testkit';
import { describeEventStoreContract } from '../event-store/event-store.contract.js';
import { MongoEventStore } from './mongo-event-store.js';

describeEventStoreContract('mongodb', async () => {
  const url = mongoUrlFor(uniqueName('store'));
  // Two clients, as two processes would have: the contract races them against each other.
  const store = await MongoEventStore.connect(url);
  const second = await MongoEventStore.connect(url);
  return {
    store,
    second,
    cleanup: async () => {
      await store.db.dropDatabase();
      await Promise.all([store.close(), second.close()]);
    },
  };
});
