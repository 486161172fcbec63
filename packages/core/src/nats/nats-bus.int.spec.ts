import { mongoUrlFor, testInfra, uniqueName } from '@keel/testkit';
import type { JetStreamManager } from '@nats-io/jetstream';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEventBusContract } from '../bus/event-bus.contract.js';
import { MongoDeadLetterStore, MongoEventStore, MongoInbox } from '../mongodb/index.js';
import { NatsEventBus } from './nats-event-bus.js';

const silent = { warn: () => {}, error: () => {} };
const fileStream = uniqueName('NATS_BUS').toUpperCase();
const filePrefix = `t.${uniqueName('nb')}`;
let admin: NatsConnection;
let jsm: JetStreamManager;
let mongo: MongoEventStore;
let streams = 0;

beforeAll(async () => {
  admin = await connect({ servers: testInfra().natsUrl });
  jsm = await jetstreamManager(admin);
  mongo = await MongoEventStore.connect(mongoUrlFor(uniqueName('nats_bus')));
});

afterAll(async () => {
  await admin?.close();
  await mongo?.db.dropDatabase();
  await mongo?.close();
});

// Each test gets its own JetStream stream (and subject prefix), deleted after it.
describeEventBusContract('NATS JetStream + MongoDB inbox and dead letters', async ({ duplicateWindowMs }) => {
  const n = ++streams;
  const streamName = `${fileStream}_${n}`;
  const bus = await NatsEventBus.connect({
    servers: testInfra().natsUrl,
    streamName,
    subjectPrefix: `${filePrefix}.s${n}`,
    inbox: new MongoInbox(mongo.db),
    deadLetters: new MongoDeadLetterStore(mongo.db),
    duplicateWindowMs,
    logger: silent,
  });
  return {
    bus,
    cleanup: async () => {
      await bus.close();
      await jsm.streams.delete(streamName);
    },
  };
});

describe('NatsEventBus on the server', () => {
  it('declares the stream and a durable idempotently, with the settings it documents', async () => {
    const streamName = `${fileStream}_DECL`;
    const subjectPrefix = `${filePrefix}.decl`;
    const options = { servers: testInfra().natsUrl, streamName, subjectPrefix, logger: silent };
    const stores = { inbox: new MongoInbox(mongo.db), deadLetters: new MongoDeadLetterStore(mongo.db) };
    const first = await NatsEventBus.connect({ ...options, ...stores, duplicateWindowMs: 60_000 });
    const second = await NatsEventBus.connect({ ...options, ...stores, duplicateWindowMs: 30_000 });
    try {
      const stream = await jsm.streams.info(streamName);
      expect(stream.config).toMatchObject({
        subjects: [`${subjectPrefix}.>`],
        storage: 'file',
        duplicate_window: 30_000_000_000,
      });

      const name = uniqueName('decl');
      const consumerOptions = {
        name,
        filter: { tenantId: 'acme', category: 'order' },
        ackWaitMs: 3_000,
        backoffMs: [100],
      };
      await (await first.consume(consumerOptions, async () => {})).stop();
      await (
        await second.consume({ ...consumerOptions, ackWaitMs: 4_000, maxInFlight: 2 }, async () => {})
      ).stop();
      const consumer = await jsm.consumers.info(streamName, name);
      expect(consumer.config).toMatchObject({
        durable_name: name,
        ack_policy: 'explicit',
        ack_wait: 4_000_000_000,
        max_ack_pending: 2,
        max_deliver: -1,
        filter_subject: `${subjectPrefix}.acme.order.*`,
        deliver_policy: 'all',
      });
      expect(consumer.config.backoff).toBeUndefined();
    } finally {
      await first.close();
      await second.close();
      await jsm.streams.delete(streamName);
    }
  });
});
