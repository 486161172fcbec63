/**
 * A writer process for the outbox kill test: it appends commits to MongoDB and runs the relay to
 * JetStream. KEEL_CRASH_POINT makes it stop dead (block forever, for the test to SIGKILL it):
 * `before-publish` — commits are in MongoDB, nothing is published yet;
 * `before-checkpoint` — the batch is on JetStream, the relay's checkpoint is not saved yet.
 */
import type { EventBus, RecordedEvent } from '@keel/core';
import { OutboxRelay } from '@keel/core';
import {
  MongoCheckpointStore,
  MongoDeadLetterStore,
  MongoEventStore,
  MongoInbox,
  MongoLeaseStore,
} from '@keel/core/mongodb';
import { NatsEventBus } from '@keel/core/nats';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const crashPoint = process.env.KEEL_CRASH_POINT ?? 'none';
const commits = Number(process.env.KEEL_COMMITS ?? '10');
const writerId = env('KEEL_WRITER_ID');

const store = await MongoEventStore.connect(env('KEEL_MONGODB_URL'));
const bus = await NatsEventBus.connect({
  servers: env('KEEL_NATS_URL'),
  streamName: env('KEEL_NATS_STREAM'),
  subjectPrefix: env('KEEL_SUBJECT_PREFIX'),
  inbox: new MongoInbox(store.db),
  deadLetters: new MongoDeadLetterStore(store.db),
});

const blockForever = (line: string): Promise<never> => {
  process.stdout.write(`${line}\n`);
  return new Promise<never>(() => undefined);
};

/** The real bus, with the crash point spliced in around its publish. */
const crashingBus: EventBus = Object.assign(Object.create(bus) as EventBus, {
  publish: async (events: RecordedEvent[]): Promise<void> => {
    if (crashPoint === 'before-publish') await blockForever(`crash-point before-publish ${events.length}`);
    await bus.publish(events);
    if (crashPoint === 'before-checkpoint')
      await blockForever(`crash-point before-checkpoint ${events.length}`);
  },
});

for (let i = 0; i < commits; i++) {
  const size = 1 + (i % 3);
  const result = await store.append(
    'acme',
    `ledger-${writerId}-${i % 4}`,
    Array.from({ length: size }, (_, k) => ({ type: 'Entry', data: { writerId, i, k } })),
  );
  process.stdout.write(`committed ${result.events.map((e) => e.eventId).join(',')}\n`);
}

const relay = new OutboxRelay({
  store,
  bus: crashingBus,
  checkpoints: new MongoCheckpointStore(store.db),
  leases: new MongoLeaseStore(store.db),
  leaseTtlMs: 1_000,
});
await relay.drain();
process.stdout.write(`drained ${relay.stats.published}\n`);
await bus.close();
await store.close();
