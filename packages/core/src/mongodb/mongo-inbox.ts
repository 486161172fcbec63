import type { Collection, Db } from 'mongodb';
import type { Inbox } from '../bus/event-bus.js';
import { ensureIndexes } from './ensure-indexes.js';
import { isDuplicateKey } from './mongo-errors.js';

interface InboxDocument {
  /** `${consumer}|${eventId}`: the primary key makes recording idempotent without other indexes. */
  _id: string;
  consumer: string;
  eventId: string;
  at: Date;
}

/** The production Inbox: one document per (consumer, handled event) in `bus_inbox`. */
export class MongoInbox implements Inbox {
  readonly #collection: Collection<InboxDocument>;
  #ready: Promise<void> | undefined;

  constructor(db: Db, collectionName = 'bus_inbox') {
    this.#collection = db.collection<InboxDocument>(collectionName);
  }

  /** Creates the indexes (idempotent); the other methods call it on first use. */
  init(): Promise<void> {
    // For pruning old entries per consumer; correctness rests on `_id` alone.
    this.#ready ??= ensureIndexes(this.#collection, [{ key: { consumer: 1, at: 1 } }]).catch(
      (error: unknown) => {
        this.#ready = undefined;
        throw error;
      },
    );
    return this.#ready;
  }

  async has(consumer: string, eventId: string): Promise<boolean> {
    await this.init();
    return (
      (await this.#collection.findOne({ _id: `${consumer}|${eventId}` }, { projection: { _id: 1 } })) !== null
    );
  }

  async record(consumer: string, eventId: string): Promise<void> {
    await this.init();
    try {
      await this.#collection.insertOne({ _id: `${consumer}|${eventId}`, consumer, eventId, at: new Date() });
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
  }
}
