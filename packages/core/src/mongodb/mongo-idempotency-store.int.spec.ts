// Runs the IdempotencyStore contract suite (its assertions are in idempotency-store.contract.ts) on this adapter.
import { mongoUrlFor, uniqueName } from '@keel/testkit';
import { afterAll, beforeAll } from 'vitest';
import { describeIdempotencyStoreContract } from '../idempotency/idempotency-store.contract.js';
import { MongoEventStore } from './mongo-event-store.js';
import { MongoIdempotencyStore } from './mongo-idempotency-store.js';

let store: MongoEventStore;

beforeAll(async () => {
  store = await MongoEventStore.connect(mongoUrlFor(uniqueName('idempotency')));
});

afterAll(async () => {
  await store?.db.dropDatabase();
  await store?.close();
});

describeIdempotencyStoreContract('MongoDB', async () => {
  let now = Date.parse('2026-01-01T00:00:00Z');
  return {
    store: new MongoIdempotencyStore(store.db, `idempotency_${uniqueName('k')}`, () => now),
    advance: (ms) => {
      now += ms;
    },
    now: () => now,
    cleanup: async () => {},
  };
});
