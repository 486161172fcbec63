import { mongoUrlFor, uniqueName } from '@keel/testkit';
import { MongoClient } from 'mongodb';
import { uuidv7 } from '@keel/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

describe('MongoDB conversation index: what it writes', () => {
  it('one document per conversation, keyed tenant|conversation, written by insert only', async () => {
    const prefix = `${uniqueName('shape')}_`;
    const index = new MongoConversationIndex(client.db(), { collectionPrefix: prefix });
    const entry = {
      tenantId: 'acme',
      conversationId: uuidv7(),
      agentId: 'support',
      createdAt: new Date().toISOString(),
    };
    await Promise.all([
      index.record(entry),
      index.record(entry),
      index.record({ ...entry, agentId: 'other' }),
    ]);
    const names = (await client.db().listCollections().toArray())
      .map((c) => c.name)
      .filter((n) => n.startsWith(prefix));
    expect(names).toHaveLength(1);
    const docs = await client.db().collection(names[0]!).find({}).toArray();
    expect(docs).toHaveLength(1);
    expect(docs[0]?._id).toBe(`acme|${entry.conversationId}`);
  });
});
