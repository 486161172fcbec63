import { eventually, mongoUrlFor, startProcess, testInfra, uniqueName } from '@keel/testkit';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InMemoryDeadLetters } from '../bus/in-memory-dead-letters.js';
import { InMemoryInbox } from '../bus/in-memory-inbox.js';
import { MongoEventStore } from '../mongodb/index.js';
import type { RecordedEvent } from '../typing/index.js';
import { uuidv7 } from '../typing/index.js';
import { NatsEventBus } from './nats-event-bus.js';

const CONSUMER_SCRIPT = 'packages/core/src/nats/testing/ledger-consumer.ts';

describe('a consumer process killed with SIGKILL in the middle of a handler', () => {
  const mongoUrl = mongoUrlFor(uniqueName('consumer_kill'));
  const streamName = uniqueName('CONSUMER_KILL').toUpperCase();
  const subjectPrefix = `t.${uniqueName('ck')}`;
  const consumer = uniqueName('ledger');
  let store: MongoEventStore;
  let bus: NatsEventBus;

  const env = (hangOn: string): Record<string, string> => ({
    KILL_MONGODB_URL: mongoUrl,
    KILL_NATS_URL: testInfra().natsUrl,
    KILL_STREAM: streamName,
    KILL_SUBJECT_PREFIX: subjectPrefix,
    KILL_CONSUMER: consumer,
    KILL_HANG_ON: hangOn,
  });

  beforeAll(async () => {
    store = await MongoEventStore.connect(mongoUrl);
    const stores = { inbox: new InMemoryInbox(), deadLetters: new InMemoryDeadLetters() };
    bus = await NatsEventBus.connect({ servers: testInfra().natsUrl, streamName, subjectPrefix, ...stores });
  });

  afterAll(async () => {
    await bus?.close();
    const nc = await connect({ servers: testInfra().natsUrl });
    await (await jetstreamManager(nc)).streams.delete(streamName).catch(() => false);
    await nc.close();
    await store?.db.dropDatabase();
    await store?.close();
  });

  it('redelivers the killed event to the next process, and every effect happens exactly once', async () => {
    const accounts = store.db.collection<{
      _id: string;
      version: number;
      total: number;
      effects: Record<string, number>;
    }>('accounts');
    const names = ['account-0', 'account-1', 'account-2'];
    await accounts.insertMany(names.map((_id) => ({ _id, version: 0, total: 0, effects: {} })));
    const events: RecordedEvent[] = [];
    for (let version = 1; version <= 5; version++) {
      for (const [i, streamName] of names.entries()) {
        events.push({
          eventId: uuidv7(),
          type: 'Deposited',
          data: { amount: 10 * version + i },
          metadata: {},
          tenantId: 'acme',
          streamName,
          version,
          commitId: uuidv7(),
          recordedAt: new Date().toISOString(),
        });
      }
    }
    const victim = events.find((e) => e.streamName === 'account-1' && e.version === 3)!;
    await bus.publish(events);

    const first = await startProcess({
      name: 'consumer-1',
      entry: CONSUMER_SCRIPT,
      env: env(victim.eventId),
      readyLine: /^ready$/,
    });
    await first.waitForLine(new RegExp(`^mid-handler ${victim.eventId} 1$`), 30_000);
    // The effect of the victim is in MongoDB; its ack is not on the server.
    expect(first.stdoutLines).toContain(`handled ${victim.eventId} 1 1`);
    expect((await first.kill('SIGKILL')).signal).toBe('SIGKILL');

    const second = await startProcess({
      name: 'consumer-2',
      entry: CONSUMER_SCRIPT,
      env: env(''),
      readyLine: /^ready$/,
    });
    await eventually(
      async () =>
        expect((await accounts.find().sort({ _id: 1 }).toArray()).map((a) => a.version)).toEqual([5, 5, 5]),
      { timeoutMs: 30_000 },
    );
    const redelivered = second.stdoutLines.find((l) => l.startsWith(`handled ${victim.eventId} `));
    expect(redelivered).toBeDefined();
    const [, , deliveryCount, applied] = redelivered!.split(' ');
    expect(Number(deliveryCount)).toBeGreaterThanOrEqual(2);
    expect(applied).toBe('0');

    for (const account of await accounts.find().toArray()) {
      const own = events.filter((e) => e.streamName === account._id);
      expect(account.total).toBe(own.reduce((sum, e) => sum + (e.data as { amount: number }).amount, 0));
      expect(account.effects).toEqual(Object.fromEntries(own.map((e) => [e.eventId, 1])));
    }
    // Order held across the crash: the first process went in publish order up to the victim, and
    // the second one started with the victim (it stayed outstanding until its ack wait expired).
    const handledIds = (lines: string[]): string[] =>
      lines.filter((l) => l.startsWith('handled ')).map((l) => l.split(' ')[1]!);
    const upToVictim = events.slice(0, events.indexOf(victim) + 1).map((e) => e.eventId);
    expect(handledIds(first.stdoutLines)).toEqual(upToVictim);
    expect(handledIds(second.stdoutLines)).toEqual([
      victim.eventId,
      ...events.slice(events.indexOf(victim) + 1).map((e) => e.eventId),
    ]);
    // Together the two processes handled every event; only the victim twice.
    const handled = [...first.stdoutLines, ...second.stdoutLines].filter((l) => l.startsWith('handled '));
    expect(handled.map((l) => l.split(' ')[1]).sort()).toEqual(
      [...events.map((e) => e.eventId), victim.eventId].sort(),
    );

    await second.kill('SIGTERM');
    expect(second.stdoutLines).toContain('closed');
  });
});
