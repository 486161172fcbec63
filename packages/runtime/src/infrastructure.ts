import type {
  CheckpointStore,
  DeadLetterStore,
  EventBus,
  EventStore,
  EventStoreAdapter,
  Inbox,
  LeaseStore,
  RelayWakeups,
} from '@keel/core';
import type { IdempotencyStore } from '@keel/core';
import {
  InMemoryCheckpointStore,
  InMemoryDeadLetters,
  InMemoryEventBus,
  InMemoryEventStore,
  InMemoryIdempotencyStore,
  InMemoryInbox,
  InMemoryLeaseStore,
  OutboxRelay,
  SealingEventBus,
  upcastingReads,
  WatchedStreams,
} from '@keel/core';
import { eventUpcasters } from '@keel/events';
import type { ConversationErasure } from './erasure.js';
import { conversationSealing } from './erasure.js';
import type { KeelConfig } from './config.js';
import type { KeelLogger } from './logger.js';
import type { ReadinessReport } from './readiness.js';
import { probeReadiness } from './readiness.js';
import { readEnv } from './env/env-check.js';
import { TrackingEventBus } from './tracking-bus.js';

/** Which store and bus adapters a process runs on. */
export interface InfrastructureKinds {
  store: 'memory' | 'mongodb';
  bus: 'memory' | 'nats';
}

/** The connections a service works with; one per process (shared by all five in the dev mode). */
export interface Infrastructure {
  /**
   * The event store, every event it reads in its current shape (@keel/events `eventUpcasters`):
   * command handlers' loads, the feed, projections and the outbox relay (so the bus too) never
   * see an old shape.
   */
  readonly store: EventStoreAdapter;
  /** The bus; consumers started through it are drained first at shutdown. */
  readonly bus: EventBus;
  /** This process's outbox relay candidate (only the lease holder publishes). */
  readonly relay: OutboxRelay;
  readonly checkpoints: CheckpointStore;
  readonly leases: LeaseStore;
  /** Requests made with an `Idempotency-Key` (the gateway), shared by its instances on MongoDB. */
  readonly idempotency: IdempotencyStore;
  /**
   * Conversations' data keys: their content is sealed in the log, snapshots and the bus with a
   * key of their own (when KEEL_MASTER_KEY is set), and destroying it erases the content.
   */
  readonly erasure: ConversationErasure;
  /**
   * The streams this process watches on the bus, shared by its caches of configuration-like
   * streams (tenant config, defaults, the tenant registry): a cache that is current by it skips
   * the read of the log's tail (`KEEL_WATCH_MAX_AGE_MS` bounds how long one read vouches).
   */
  readonly watched: WatchedStreams;
  readonly kinds: InfrastructureKinds;
  /** What the start found wrong but worked with (logged as warnings too), e.g. another store's stream. */
  readonly warnings?: readonly string[];
  /** Whether the store and the bus answer now. */
  probe(timeoutMs?: number): Promise<ReadinessReport>;
  /** Drains consumers, flushes the outbox, closes the bus then the store; logs each step. Idempotent. */
  close(): Promise<void>;
}

interface Storage {
  store: EventStoreAdapter;
  checkpoints: CheckpointStore;
  leases: LeaseStore;
  inbox: Inbox;
  deadLetters: DeadLetterStore;
  idempotency: IdempotencyStore;
}

const connectStorage = async (config: KeelConfig): Promise<Storage> => {
  if (config.mongodbUrl === undefined) {
    return {
      store: new InMemoryEventStore(),
      checkpoints: new InMemoryCheckpointStore(),
      leases: new InMemoryLeaseStore(),
      inbox: new InMemoryInbox(),
      deadLetters: new InMemoryDeadLetters(),
      idempotency: new InMemoryIdempotencyStore(),
    };
  }
  const mongo = await import('@keel/core/mongodb');
  const store = await mongo.MongoEventStore.connect(config.mongodbUrl);
  return {
    store,
    checkpoints: new mongo.MongoCheckpointStore(store.db),
    leases: new mongo.MongoLeaseStore(store.db),
    inbox: new mongo.MongoInbox(store.db),
    deadLetters: new mongo.MongoDeadLetterStore(store.db),
    idempotency: new mongo.MongoIdempotencyStore(store.db),
  };
};

/** The bus, and on NATS the wake-up notices between the relays of the processes sharing the log. */
const connectBus = async (
  config: KeelConfig,
  storage: Storage,
  logger: KeelLogger,
): Promise<{ bus: EventBus; wakeups?: RelayWakeups }> => {
  const busLogger = logger.child({ component: 'bus' });
  if (config.natsUrl === undefined) {
    const bus = new InMemoryEventBus({
      inbox: storage.inbox,
      deadLetters: storage.deadLetters,
      logger: busLogger,
    });
    return { bus };
  }
  const { NatsEventBus } = await import('@keel/core/nats');
  const bus = await NatsEventBus.connect({
    servers: config.natsUrl.split(',').map((server) => server.trim()),
    streamName: config.natsStream,
    subjectPrefix: config.subjectPrefix,
    inbox: storage.inbox,
    deadLetters: storage.deadLetters,
    connectionName: `keel-${config.service}-${process.pid}`,
    logger: busLogger,
  });
  return { bus, wakeups: bus.relayWakeups(RELAY_NAME) };
};

/**
 * On MongoDB and NATS, the stream should hold this store's events only. One that holds another
 * store's (two databases on one `KEEL_NATS_STREAM`, e.g. a dev restart on a fresh database) is
 * warned about, not refused: consumers would see events whose streams this store does not have.
 * The store's identity is a document in it; the stream's store is recorded in a KV bucket.
 */
const checkStreamOwner = async (
  config: KeelConfig,
  store: EventStore,
  bus: EventBus,
  logger: KeelLogger,
): Promise<string | undefined> => {
  if (config.mongodbUrl === undefined || config.natsUrl === undefined) return undefined;
  const [mongo, nats] = await Promise.all([import('@keel/core/mongodb'), import('@keel/core/nats')]);
  if (!(store instanceof mongo.MongoEventStore) || !(bus instanceof nats.NatsEventBus)) return undefined;
  try {
    const storeId = await mongo.storeIdentity(store.db);
    const { stream, owner } = await bus.claimStreamFor(storeId);
    if (owner === storeId) return undefined;
    const warning =
      `the JetStream stream ${stream} holds the events of another store (${owner}; this MONGODB_URL's ` +
      `store is ${storeId}): set KEEL_NATS_STREAM and KEEL_SUBJECT_PREFIX to a stream of this store's own`;
    logger.warn({ stream, storeId, streamStoreId: owner }, warning);
    return warning;
  } catch (error) {
    logger.warn({ err: error }, 'could not check which store the event stream belongs to');
    return undefined;
  }
};

/** The outbox relay's checkpoint and lease name (one relay per log). */
const RELAY_NAME = 'outbox';

/**
 * Connects the store (MongoDB when `MONGODB_URL` is set, else in memory) and the bus (NATS
 * JetStream when `NATS_URL` is set, else in process), and starts this process's outbox relay.
 */
export async function createInfrastructure(
  config: KeelConfig,
  logger: KeelLogger,
  options: { startRelay?: boolean } = {},
): Promise<Infrastructure> {
  const kinds: InfrastructureKinds = {
    store: config.mongodbUrl === undefined ? 'memory' : 'mongodb',
    bus: config.natsUrl === undefined ? 'memory' : 'nats',
  };
  const storage = await connectStorage(config);
  let rawBus: EventBus;
  let wakeups: RelayWakeups | undefined;
  try {
    ({ bus: rawBus, wakeups } = await connectBus(config, storage, logger));
  } catch (error) {
    await storage.store.close().catch(() => undefined);
    throw error;
  }
  const streamWarning = await checkStreamOwner(config, storage.store, rawBus, logger);
  // The fast path: commits published as soon as they are durable, feeds woken by them (see OutboxRelay).
  const fastPath = readEnv('KEEL_FAST_PATH') !== 'off';
  const { checkpoints, leases, idempotency } = storage;
  const upcasters = eventUpcasters();
  const sealing = await conversationSealing(config, storage.store, logger);
  // Readers see content (opened, then upcast); the log, its snapshots and the bus hold it sealed.
  const store = upcastingReads(sealing.store, upcasters);
  // The relay publishes commits as stored (sealed); consumers get them opened and upcast.
  const sealedBus = new SealingEventBus(rawBus, sealing.sealer, (event) => upcasters.upcast(event));
  // Data keys destroyed by any process are forgotten here as soon as that is announced.
  const erasures = sealing.keyring.connect(rawBus.ephemeral);
  const bus = new TrackingEventBus(sealedBus, { watch: fastPath });
  const maxAge = readEnv('KEEL_WATCH_MAX_AGE_MS');
  const watched = new WatchedStreams(bus, maxAge === undefined ? {} : { maxAgeMs: Number(maxAge) });
  const relay = new OutboxRelay({
    store: storage.store,
    bus: sealedBus,
    checkpoints,
    leases,
    name: RELAY_NAME,
    leaseTtlMs: config.outboxLeaseMs,
    publishOnCommit: fastPath,
    ...(wakeups ? { wakeups } : {}),
    logger: logger.child({ component: 'outbox' }),
  });
  // Tools that only look (the operator CLI) do not run a relay candidate.
  if (options.startRelay ?? true) relay.start();

  let closing: Promise<void> | undefined;
  const close = async (): Promise<void> => {
    watched.close();
    const consumers = await bus.stopConsumers();
    logger.info({ step: 'consumers-drained', consumers }, 'shutdown: consumers drained');
    await relay.stop();
    // After the outbox flush: an erasure it publishes is still announced.
    erasures.unsubscribe();
    logger.info(
      { step: 'outbox-flushed', published: relay.stats.published, position: relay.stats.position },
      'shutdown: outbox flushed',
    );
    await bus.close().catch((error: unknown) => logger.error({ err: error }, 'closing the bus failed'));
    await store.close().catch((error: unknown) => logger.error({ err: error }, 'closing the store failed'));
    logger.info(
      { step: 'connections-closed', store: kinds.store, bus: kinds.bus },
      'shutdown: connections closed',
    );
  };

  return {
    store,
    bus,
    relay,
    checkpoints,
    leases,
    idempotency,
    erasure: sealing.erasure,
    watched,
    kinds,
    warnings: streamWarning === undefined ? [] : [streamWarning],
    probe: (timeoutMs) => probeReadiness(store, rawBus, timeoutMs),
    close: () => (closing ??= close()),
  };
}
