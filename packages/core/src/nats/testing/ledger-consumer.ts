/**
 * A consumer process for consumer-kill.int.spec.ts. Each event adds `data.amount` to its
 * account, idempotently by version: the update only matches the account at `version - 1`.
 * With KILL_HANG_ON=<eventId> it applies that event, prints `mid-handler`, and hangs before the
 * ack, for the test to SIGKILL it. Prints `ready`, then `handled <eventId> <deliveryCount> <applied>`.
 */
import { MongoDeadLetterStore, MongoEventStore, MongoInbox } from '../../mongodb/index.js';
import { NatsEventBus } from '../nats-event-bus.js';

interface Account {
  _id: string;
  version: number;
  total: number;
  effects: Record<string, number>;
}

const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is required`);
  return value;
};
const print = (line: string): void => void process.stdout.write(`${line}\n`);

const store = await MongoEventStore.connect(env('KILL_MONGODB_URL'));
const accounts = store.db.collection<Account>('accounts');
const bus = await NatsEventBus.connect({
  servers: env('KILL_NATS_URL'),
  streamName: env('KILL_STREAM'),
  subjectPrefix: env('KILL_SUBJECT_PREFIX'),
  inbox: new MongoInbox(store.db),
  deadLetters: new MongoDeadLetterStore(store.db),
});
const hangOn = process.env.KILL_HANG_ON ?? '';

await bus.consume(
  { name: env('KILL_CONSUMER'), idempotency: 'none', ackWaitMs: 1_000, backoffMs: [100] },
  async ({ event, deliveryCount }) => {
    const { amount } = event.data as { amount: number };
    const result = await accounts.updateOne(
      { _id: event.streamName, version: event.version - 1 },
      { $set: { version: event.version }, $inc: { total: amount, [`effects.${event.eventId}`]: 1 } },
    );
    if (result.modifiedCount === 0) {
      const account = await accounts.findOne({ _id: event.streamName });
      // Behind the event: an earlier one is missing, so fail and let the bus redeliver.
      if ((account?.version ?? 0) < event.version)
        throw new Error(`${event.streamName} is behind ${event.version}`);
    }
    print(`handled ${event.eventId} ${deliveryCount} ${result.modifiedCount}`);
    if (event.eventId === hangOn) {
      print(`mid-handler ${event.eventId} ${deliveryCount}`);
      await new Promise<never>(() => undefined);
    }
  },
);

process.once('SIGTERM', () => {
  void (async () => {
    await bus.close();
    await store.close();
    print('closed');
    process.exit(0);
  })();
});
print('ready');
