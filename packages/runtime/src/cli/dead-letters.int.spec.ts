// The operator CLI, as a separate process against real NATS and MongoDB: it lists what a consumer
// dead-lettered and replays it to that consumer only.
import type { Consumer, Delivery, RecordedEvent } from '@keel/core';
import { InMemoryEventStore } from '@keel/core';
import { MongoDeadLetterStore, MongoEventStore, MongoInbox } from '@keel/core/mongodb';
import { NatsEventBus } from '@keel/core/nats';
import { eventually, mongoUrlFor, startProcess, testInfra, uniqueName } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const CLI = 'packages/runtime/src/cli/dead-letters.ts';

describe('dead-letters CLI', () => {
  const mongoUrl = mongoUrlFor(uniqueName('dlq_cli'));
  const streamName = uniqueName('DLQ').toUpperCase();
  const subjectPrefix = `t.${uniqueName('dlq')}`;
  const env = {
    MONGODB_URL: mongoUrl,
    NATS_URL: testInfra().natsUrl,
    KEEL_NATS_STREAM: streamName,
    KEEL_SUBJECT_PREFIX: subjectPrefix,
  };
  let store: MongoEventStore;
  let bus: NatsEventBus;
  let consumer: Consumer;
  let failing = true;
  const handled: Delivery[] = [];
  let event: RecordedEvent;

  const cli = async (...args: string[]) => {
    const run = await startProcess({ name: 'dead-letters', entry: CLI, args, env });
    const exit = await run.waitForExit(30_000);
    return { exit, out: run.stdoutLines, err: run.stderrLines.join('\n') };
  };

  beforeAll(async () => {
    store = await MongoEventStore.connect(mongoUrl);
    bus = await NatsEventBus.connect({
      servers: testInfra().natsUrl,
      streamName,
      subjectPrefix,
      inbox: new MongoInbox(store.db),
      deadLetters: new MongoDeadLetterStore(store.db),
      logger: { warn: () => {}, error: () => {} },
    });
    consumer = await bus.consume({ name: 'billing', maxDeliver: 2, backoffMs: [50] }, async (delivery) => {
      if (failing) throw new Error('card processor down');
      handled.push(delivery);
    });
    [event] = (
      await new InMemoryEventStore().append('acme', 'invoice-7', [{ type: 'Issued', data: { cents: 900 } }])
    ).events as [RecordedEvent];
    await bus.publish([event]);
    await eventually(async () => expect(await bus.deadLetters.list()).toHaveLength(1), { timeoutMs: 15_000 });
  });

  afterAll(async () => {
    await consumer?.stop();
    await bus?.close();
    await store?.db.dropDatabase();
    await store?.close();
  });

  it('lists the dead letter without its payload, then replays it to its consumer', async () => {
    const listed = await cli('list', '--consumer', 'billing');
    expect(listed.exit.code, listed.err).toBe(0);
    expect(listed.out).toHaveLength(1);
    const letter = JSON.parse(listed.out[0]!) as Record<string, unknown>;
    expect(letter).toMatchObject({
      consumer: 'billing',
      tenantId: 'acme',
      eventId: event.eventId,
      type: 'Issued',
      streamName: 'invoice-7',
      deliveryCount: 2,
      error: 'card processor down',
    });
    expect(JSON.stringify(letter)).not.toContain('900');
    expect((await cli('list', '--tenant', 'globex')).out).toEqual([]);

    failing = false;
    const replayed = await cli('replay', String(letter.id));
    expect(replayed.exit.code, replayed.err).toBe(0);
    await eventually(() => expect(handled.map((d) => d.replayOf)).toEqual([letter.id]), {
      timeoutMs: 15_000,
    });
    await eventually(async () => expect((await cli('list')).out).toEqual([]), { timeoutMs: 15_000 });
    const all = await cli('list', '--all');
    expect(JSON.parse(all.out[0]!)).toHaveProperty('replayedAt');
  });

  it('answers bad input with a clear error and a non-zero exit', async () => {
    const unknown = await cli('replay', 'no-such-letter');
    expect(unknown.exit.code).toBe(1);
    expect(unknown.err).toMatch(/NOT_FOUND/);
    const usage = await cli('purge');
    expect(usage.exit.code).toBe(2);
    expect(usage.err).toMatch(/usage: dead-letters list/);
  });
});
