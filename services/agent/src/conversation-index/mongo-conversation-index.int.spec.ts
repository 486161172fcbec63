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

describe('MongoDB conversation index: two processes writing one entry', () => {
  it('a process whose last write of an entry is behind the other’s neither moves it back nor brings back a removed one', async () => {
    const prefix = `${uniqueName('two')}_`;
    const [a, b] = [0, 1].map(() => new MongoConversationIndex(client.db(), { collectionPrefix: prefix }));
    const entry = {
      tenantId: 'acme',
      conversationId: uuidv7(),
      agentId: 'support',
      createdAt: new Date().toISOString(),
    };
    await a!.record(entry);
    await a!.update({ ...entry, title: 'five', version: 5 });
    await b!.update({ ...entry, title: 'seven', version: 7 });
    await a!.update({ ...entry, title: 'six', version: 6 });
    expect((await b!.list('acme')).conversations.map((c) => c.title)).toEqual(['seven']);
    await a!.remove('acme', entry.conversationId);
    await b!.update({ ...entry, title: 'eight', version: 8 });
    expect((await a!.list('acme')).conversations).toEqual([]);
  });
});
