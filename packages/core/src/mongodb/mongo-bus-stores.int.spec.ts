import { mongoUrlFor, uniqueName } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

describe('MongoDB dead letters: what they store', () => {
  it('keeps the event as JSON text, so a payload MongoDB could not hold as a document survives', async () => {
    const deadLetters = new MongoDeadLetterStore(store.db, `dead_${uniqueName('shape')}`);
    const event = {
      eventId: '01a1fff1-dce9-70aa-9a9a-3561fa88a758',
      type: 'Odd',
      data: { 'a.b': { $where: 'x' }, big: 2 ** 53 - 1 },
      metadata: {},
      tenantId: 'acme',
      streamName: 'doc-1',
      version: 1,
      commitId: '01a1fff1-dce9-70ab-b2fc-c15f3b1fe11c',
      recordedAt: new Date().toISOString(),
    };
    await deadLetters.record({
      id: 'dl-1',
      consumer: 'audit',
      tenantId: 'acme',
      event,
      error: 'boom',
      deliveryCount: 5,
      deadAt: new Date().toISOString(),
    });
    expect((await deadLetters.get('dl-1'))?.event).toEqual(event);
    expect(await deadLetters.get('dl-2')).toBeUndefined();
  });
});
