import { mongoUrlFor, uniqueName } from '@keel/testkit';
import { MongoClient } from 'mongodb';
import { afterAll } from 'vitest';
import { describeHookLaneContract } from './hook-lanes.contract.js';
import { MongoHookLaneStore } from './mongo-hook-lanes.js';

const url = mongoUrlFor(uniqueName('hooklanes'));
const clients: MongoClient[] = [];

afterAll(async () => {
  await clients[0]?.db().dropDatabase();
  await Promise.all(clients.map((client) => client.close()));
});

describeHookLaneContract('mongodb', async () => {
  const [a, b] = await Promise.all([new MongoClient(url).connect(), new MongoClient(url).connect()]);
  clients.push(a, b);
  return { lanes: new MongoHookLaneStore(a.db()), second: new MongoHookLaneStore(b.db()) };
});
