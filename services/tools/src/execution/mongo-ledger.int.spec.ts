import { mongoUrlFor, uniqueName } from '@keel/testkit';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeLedgerContract } from './ledger.contract.js';
import type { ToolCallDocument, ToolOutcomeDocument } from './mongo-ledger.js';
import { MongoToolCallLedger } from './mongo-ledger.js';

let url: string;
const clients: MongoClient[] = [];

beforeAll(() => {
  url = mongoUrlFor(uniqueName('ledger'));
});

afterAll(async () => {
  const [first] = clients;
  await first?.db().dropDatabase();
  await Promise.all(clients.map((client) => client.close()));
});

const connect = async (): Promise<MongoClient> => {
  const client = await new MongoClient(url).connect();
  clients.push(client);
  return client;
};

describeLedgerContract('mongodb', async () => {
  const collectionPrefix = `${uniqueName('t')}_`;
  const [a, b] = await Promise.all([connect(), connect()]);
  return {
    ledger: new MongoToolCallLedger(a.db(), { collectionPrefix }),
    second: new MongoToolCallLedger(b.db(), { collectionPrefix }),
    cleanup: async () => undefined,
  };
});

describe('MongoDB tool-call ledger', () => {
  it('writes one call and one outcome document, keyed `${tenantId}|${toolCallId}`, the outcome as JSON text', async () => {
    const client = await connect();
    const collectionPrefix = `${uniqueName('doc')}_`;
    const ledger = new MongoToolCallLedger(client.db(), { collectionPrefix });
    const key = { tenantId: 'acme', toolCallId: 'call_1' };
    await ledger.begin(key, { conversationId: 'conv-1', name: 'get_weather' });
    await ledger.complete(key, { ok: true, result: { $set: 1, 'a.b': 2 }, attempts: 1, durationMs: 5 });
    await ledger.complete(key, { ok: true, result: 'late', attempts: 1, durationMs: 5 });
    const calls = await client
      .db()
      .collection<ToolCallDocument>(`${collectionPrefix}tool_calls`)
      .find()
      .toArray();
    expect(calls).toEqual([
      {
        _id: 'acme|call_1',
        tenantId: 'acme',
        toolCallId: 'call_1',
        conversationId: 'conv-1',
        name: 'get_weather',
        createdAt: expect.any(Date),
      },
    ]);
    const outcomes = await client
      .db()
      .collection<ToolOutcomeDocument>(`${collectionPrefix}tool_call_outcomes`)
      .find()
      .toArray();
    expect(outcomes).toHaveLength(1);
    expect(outcomes[0]?._id).toBe('acme|call_1');
    expect(JSON.parse(outcomes[0]!.outcome)).toEqual({
      ok: true,
      result: { $set: 1, 'a.b': 2 },
      attempts: 1,
      durationMs: 5,
    });
  });
});

describe('MongoDB tool-call ledger round trips', () => {
  it('claims a call with one insert and records its outcome with one more; only a duplicate claim reads', async () => {
    const client = await new MongoClient(url, { monitorCommands: true }).connect();
    clients.push(client);
    const commands: string[] = [];
    client.on('commandStarted', (started) => {
      const collection = started.command[started.commandName] as unknown;
      commands.push(`${started.commandName} ${String(collection).replace(/^.*?_tool/, 'tool')}`);
    });
    const ledger = new MongoToolCallLedger(client.db(), { collectionPrefix: `${uniqueName('rt')}_` });
    const key = { tenantId: 'acme', toolCallId: 'call_1' };
    expect((await ledger.begin(key, { conversationId: 'conv-1', name: 'get_weather' })).state).toBe('new');
    await ledger.complete(key, { ok: true, result: 1, attempts: 1, durationMs: 5 });
    expect(commands).toEqual(['insert tool_calls', 'insert tool_call_outcomes']);
    commands.length = 0;
    expect((await ledger.begin(key, { conversationId: 'conv-1', name: 'get_weather' })).state).toBe(
      'completed',
    );
    expect(commands).toEqual(['insert tool_calls', 'find tool_calls', 'find tool_call_outcomes']);
  });
});
