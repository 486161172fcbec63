// Runs the sealing contract (sealing.contract.ts) on the MongoDB event store and data key store.
import { mongoUrlFor, uniqueName } from '@keel/testkit';
import { afterAll, beforeAll } from 'vitest';
import { describeSealingContract } from '../sealing/sealing.contract.js';
import { MongoDataKeyStore } from './mongo-data-keys.js';
import { MongoEventStore } from './mongo-event-store.js';

let store: MongoEventStore;

beforeAll(async () => {
  store = await MongoEventStore.connect(mongoUrlFor(uniqueName('sealing')));
});

afterAll(async () => {
  await store?.db.dropDatabase();
  await store?.close();
});

describeSealingContract('MongoDB', async () => {
  // One database, a stream namespace per test: tenants keep the tests apart.
  await Promise.resolve();
  return { store, keys: new MongoDataKeyStore(store.db, { collectionPrefix: `${uniqueName('k')}_` }) };
});
