import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { eventually, mongoUrlFor, startProcess, testInfra, uniqueName } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../typing/index.js';
import { readWholeLog } from '../event-store/event-store.contract.js';
import { MongoDeadLetterStore, MongoEventStore, MongoInbox } from '../mongodb/index.js';
import { NatsEventBus } from './index.js';

const WRITER = 'packages/core/test-fixtures/outbox-writer.ts';

describe('outbox: a writer killed with SIGKILL around its publish', () => {
  const mongoUrl = mongoUrlFor(uniqueName('outbox_kill'));
  const natsStream = uniqueName('OUTBOX_KILL').toUpperCase();
  const subjectPrefix = `t.${uniqueName('ok')}`;
  let store: MongoEventStore;

  const env = (writerId: string, crashPoint: string, commits: number) => ({
    KEEL_MONGODB_URL: mongoUrl,
    KEEL_NATS_URL: testInfra().natsUrl,
    KEEL_NATS_STREAM: natsStream,
    KEEL_SUBJECT_PREFIX: subjectPrefix,
    KEEL_WRITER_ID: writerId,
    KEEL_CRASH_POINT: crashPoint,
    KEEL_COMMITS: String(commits),
  });

  const streamMessages = async (): Promise<number> => {
    const nc = await connect({ servers: testInfra().natsUrl });
    try {
      const jsm = await jetstreamManager(nc);
      return (await jsm.streams.info(natsStream)).state.messages;
    } catch {
      return 0;
    } finally {
      await nc.close();
    }
  };

  beforeAll(async () => {
    store = await MongoEventStore.connect(mongoUrl);
  });

  afterAll(async () => {
    const nc = await connect({ servers: testInfra().natsUrl });
    await (await jetstreamManager(nc)).streams.delete(natsStream).catch(() => false);
    await nc.close();
    await store.db.dropDatabase();
    await store.close();
  });

  it('publishes every committed event to JetStream exactly once after restarts', async () => {
    // 1. Killed after its MongoDB commits, before anything reached JetStream.
    const first = await startProcess({
      name: 'writer-1',
      entry: WRITER,
      env: env('w1', 'before-publish', 12),
    });
    await first.waitForLine(/^crash-point before-publish/, 30_000);
    await first.kill('SIGKILL');
    const committedByFirst = first.stdoutLines.filter((l) => l.startsWith('committed ')).length;
    expect(committedByFirst).toBe(12);
    expect(await streamMessages()).toBe(0);

    // 2. Killed after publishing, before saving its checkpoint: the next relay republishes that batch.
    const second = await startProcess({
      name: 'writer-2',
      entry: WRITER,
      env: env('w2', 'before-checkpoint', 7),
    });
    await second.waitForLine(/^crash-point before-checkpoint/, 30_000);
    await second.kill('SIGKILL');
    const afterSecond = await streamMessages();
    expect(afterSecond).toBeGreaterThan(0);

    // 3. A healthy restart: republishes from the checkpoint (deduplicated by Nats-Msg-Id), then its own.
    const third = await startProcess({ name: 'writer-3', entry: WRITER, env: env('w3', 'none', 5) });
    await third.waitForLine(/^drained/, 60_000);
    expect((await third.waitForExit()).code).toBe(0);

    const committed = await readWholeLog(store);
    const committedIds = committed.map((e) => e.eventId);
    expect(new Set(committedIds).size).toBe(committedIds.length);
    expect(committed.length).toBeGreaterThanOrEqual(12 + 7 + 5);

    // JetStream itself holds each event once: the republished batch was deduplicated by event id.
    expect(await streamMessages()).toBe(committed.length);

    // An idempotent consumer sees every committed event exactly once, in each stream's order.
    const bus = await NatsEventBus.connect({
      servers: testInfra().natsUrl,
      streamName: natsStream,
      subjectPrefix,
      inbox: new MongoInbox(store.db),
      deadLetters: new MongoDeadLetterStore(store.db),
    });
    const seen: RecordedEvent[] = [];
    const consumer = await bus.consume({ name: 'kill_check', ackWaitMs: 5_000 }, async (d) => {
      seen.push(d.event);
    });
    await eventually(() => expect(seen.length).toBe(committed.length), { timeoutMs: 30_000 });
    await consumer.stop();
    await bus.close();
    expect(seen.map((e) => e.eventId).sort()).toEqual([...committedIds].sort());
    const versions = new Map<string, number>();
    for (const e of seen) {
      expect(e.version).toBeGreaterThan(versions.get(e.streamName) ?? 0);
      versions.set(e.streamName, e.version);
    }
  });
});
