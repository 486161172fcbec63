import { mongoUrlFor, testInfra, uniqueName } from '@keel/testkit';
import type { JetStreamManager } from '@nats-io/jetstream';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEphemeralContract } from '../bus/ephemeral.contract.js';
import { describeEventBusContract } from '../bus/event-bus.contract.js';
import { EventTooLargeError } from '../errors/index.js';
import { MongoDeadLetterStore, MongoEventStore, MongoInbox } from '../mongodb/index.js';
import type { RecordedEvent } from '../typing/index.js';
import { uuidv7 } from '../typing/index.js';
import { NatsEventBus } from './nats-event-bus.js';
import { eventSubject } from './subjects.js';

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

// Ephemeral messages go on core NATS beside the stream; the check that JetStream stored none of them
// is the message count of the bus's own stream after the run.
describeEphemeralContract('core NATS', async () => {
  const n = ++streams;
  const streamName = `${fileStream}_${n}`;
  const bus = await NatsEventBus.connect({
    servers: testInfra().natsUrl,
    streamName,
    subjectPrefix: `${filePrefix}.s${n}`,
    inbox: new MongoInbox(mongo.db),
    deadLetters: new MongoDeadLetterStore(mongo.db),
    logger: silent,
  });
  return {
    bus,
    cleanup: async () => {
      await bus.close();
      expect((await jsm.streams.info(streamName)).state.messages).toBe(0);
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

  it('writes a publish to the socket within the call, not at the next turn of the loop (a commit fast-published leaves before its appender goes on)', async () => {
    const streamName = `${fileStream}_NOW`;
    const bus = await NatsEventBus.connect({
      servers: testInfra().natsUrl,
      streamName,
      subjectPrefix: `${filePrefix}.now`,
      inbox: new MongoInbox(mongo.db),
      deadLetters: new MongoDeadLetterStore(mongo.db),
      logger: silent,
    });
    try {
      const transport = (bus as unknown as { nc: { protocol: { transport: { send(f: Uint8Array): void } } } })
        .nc.protocol.transport;
      const written: string[] = [];
      const send = transport.send.bind(transport);
      transport.send = (frame) => {
        written.push(new TextDecoder().decode(frame));
        send(frame);
      };
      const event: RecordedEvent = {
        eventId: uuidv7(),
        type: 'TurnStarted',
        data: {},
        metadata: {},
        tenantId: 'acme',
        streamName: 'conversation-1',
        version: 2,
        commitId: uuidv7(),
        recordedAt: new Date().toISOString(),
      };
      const published = bus.publish([event]);
      // Nothing awaited yet: the connection holds no write back for a later turn of the loop.
      expect(written.join('')).toContain(event.eventId);
      await published;
      expect((await jsm.streams.info(streamName)).state.messages).toBe(1);
    } finally {
      await bus.close();
      await jsm.streams.delete(streamName);
    }
  });

  it('publishes one message per event with its subject, id and headers; replays carry their target', async () => {
    const streamName = `${fileStream}_WIRE`;
    const subjectPrefix = `${filePrefix}.wire`;
    const deadLetters = new MongoDeadLetterStore(mongo.db);
    const bus = await NatsEventBus.connect({
      servers: testInfra().natsUrl,
      streamName,
      subjectPrefix,
      inbox: new MongoInbox(mongo.db),
      deadLetters,
      logger: silent,
    });
    try {
      const event: RecordedEvent = {
        eventId: uuidv7(),
        type: 'InvoiceIssued',
        data: { total: 12 },
        metadata: {},
        tenantId: 'acme',
        streamName: 'invoice-2024/07 #1.a*b>c',
        version: 7,
        commitId: uuidv7(),
        recordedAt: new Date().toISOString(),
      };
      await bus.publish([event, event]);
      const stored = await jsm.streams.getMessage(streamName, { seq: 1 });
      expect(stored?.subject).toBe(eventSubject(subjectPrefix, event));
      expect(stored?.subject.split('.')).toHaveLength(subjectPrefix.split('.').length + 3);
      expect(stored?.json()).toEqual(event);
      const h = stored!.header;
      expect([
        h.get('Nats-Msg-Id'),
        h.get('Keel-Event-Type'),
        h.get('Keel-Tenant'),
        h.get('Keel-Version'),
      ]).toEqual([event.eventId, 'InvoiceIssued', 'acme', '7']);
      expect(decodeURIComponent(h.get('Keel-Stream'))).toBe(event.streamName);
      expect((await jsm.streams.info(streamName)).state.messages).toBe(1);

      const id = uuidv7();
      const deadAt = new Date().toISOString();
      await deadLetters.record({
        id,
        consumer: 'billing',
        tenantId: 'acme',
        event,
        error: 'x',
        deliveryCount: 5,
        deadAt,
      });
      await bus.replayDeadLetter(id);
      const replay = await jsm.streams.getMessage(streamName, { seq: 2 });
      expect(replay?.subject).toBe(stored?.subject);
      expect(replay?.header.get('Keel-Replay-For')).toBe('billing');
      expect(replay?.header.get('Keel-Replay-Of')).toBe(id);
      expect(replay?.header.get('Nats-Msg-Id')).toMatch(new RegExp(`^replay-${id}-\\d+$`));

      const huge = { ...event, eventId: uuidv7(), data: { blob: 'x'.repeat(admin.info!.max_payload) } };
      await expect(bus.publish([huge])).rejects.toBeInstanceOf(EventTooLargeError);
    } finally {
      await bus.close();
      await jsm.streams.delete(streamName);
    }
  });
});
