import { mongoUrlFor, uniqueName } from '@keel/testkit';
import { afterAll, beforeAll } from 'vitest';
import { describeBusStoresContract } from '../bus/bus-stores.contract.js';
import { MongoDeadLetterStore } from './mongo-dead-letters.js';
import { MongoEventStore } from './mongo-event-store.js';
import { MongoInbox } from './mongo-inbox.js';

let store: MongoEventStore;

beforeAll(async () => {
  store = await MongoEventStore.connect(mongoUrlFor(uniqueName('bus_stores')));
});

afterAll(async () => {
  await store?.db.dropDatabase();
  await store?.close();
});

describeBusStoresContract('MongoDB', async () => {
  const suffix = uniqueName('s');
  const inbox = new MongoInbox(store.db, `inbox_${suffix}`);
  const deadLetters = new MongoDeadLetterStore(store.db, `dead_${suffix}`);
  await Promise.all([inbox.init(), deadLetters.init(), inbox.init()]);
  return { inbox, deadLetters, cleanup: async () => {} };
});
