import { mongoUrlFor, uniqueName } from '@keel/testkit';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll } from 'vitest';
import { describeConversationIndexContract } from './conversation-index.contract.js';
import { MongoConversationIndex } from './mongo-conversation-index.js';

let client: MongoClient;

beforeAll(async () => {
  client = await new MongoClient(mongoUrlFor(uniqueName('x'))).connect();
});

afterAll(async () => {
  await client?.db().dropDatabase();
  await client?.close();
});

describeConversationIndexContract('mongodb', () =>
  Promise.resolve(new MongoConversationIndex(client.db(), { collectionPrefix: `${uniqueName('ci')}_` })),
);
