import type { Collection, Db, Filter } from 'mongodb';
import type { DeadLetter, DeadLetterStore } from '../bus/event-bus.js';
import { NotFoundError } from '../errors/index.js';
import type { RecordedEvent } from '../typing/index.js';
import { ensureIndexes } from './ensure-indexes.js';

interface DeadLetterDocument {
  _id: string;
  consumer: string;
  tenantId: string;
  /** The event as JSON text: payload keys with `.` or `$` cannot be sub-document keys everywhere. */
  event: string;
  eventId: string;
  error: string;
  deliveryCount: number;
  deadAt: string;
  replayedAt?: string;
}

/** The production DeadLetterStore: one document per dead letter in `bus_dead_letters`. */
export class MongoDeadLetterStore implements DeadLetterStore {
  readonly #collection: Collection<DeadLetterDocument>;
  #ready: Promise<void> | undefined;

  constructor(db: Db, collectionName = 'bus_dead_letters') {
    this.#collection = db.collection<DeadLetterDocument>(collectionName);
  }

  /** Creates the indexes (idempotent); the other methods call it on first use. */
  init(): Promise<void> {
    this.#ready ??= ensureIndexes(this.#collection, [
      { key: { consumer: 1, deadAt: 1 } },
      { key: { tenantId: 1, deadAt: 1 } },
    ]).catch((error: unknown) => {
      this.#ready = undefined;
      throw error;
    });
    return this.#ready;
  }

  async record(deadLetter: DeadLetter): Promise<void> {
    await this.init();
    const { id, event, replayedAt: _ignored, ...rest } = deadLetter;
    const document: DeadLetterDocument = {
      _id: id,
      ...rest,
      event: JSON.stringify(event),
      eventId: event.eventId,
    };
    await this.#collection.replaceOne({ _id: id }, document, { upsert: true });
  }

  async list(
    options: { consumer?: string; tenantId?: string; includeReplayed?: boolean; limit?: number } = {},
  ): Promise<DeadLetter[]> {
    await this.init();
    const filter: Filter<DeadLetterDocument> = {};
    if (options.consumer !== undefined) filter.consumer = options.consumer;
    if (options.tenantId !== undefined) filter.tenantId = options.tenantId;
    if (options.includeReplayed !== true) filter.replayedAt = { $exists: false };
    const documents = await this.#collection
      .find(filter)
      .sort({ deadAt: 1, _id: 1 })
      .limit(options.limit ?? 100)
      .toArray();
    return documents.map(toDeadLetter);
  }

  async get(id: string): Promise<DeadLetter | undefined> {
    await this.init();
    const document = await this.#collection.findOne({ _id: id });
    return document === null ? undefined : toDeadLetter(document);
  }

  /**
   * Unconditional but for existence. The only write it can race is `record` of the same id (a
   * second replay of the letter that died too): whichever lands, one replay handled the event, and
   * a letter shown dead again, replayed, is a duplicate its (idempotent) consumer handles once.
   */
  async markReplayed(id: string, at: string): Promise<void> {
    await this.init();
    const result = await this.#collection.updateOne({ _id: id }, { $set: { replayedAt: at } });
    if (result.matchedCount === 0) throw new NotFoundError(`dead letter ${id} not found`);
  }
}

const toDeadLetter = (document: DeadLetterDocument): DeadLetter => {
  const { _id, event, eventId: _eventId, replayedAt, ...rest } = document;
  return {
    id: _id,
    ...rest,
    event: JSON.parse(event) as RecordedEvent,
    ...(replayedAt === undefined ? {} : { replayedAt }),
  };
};
