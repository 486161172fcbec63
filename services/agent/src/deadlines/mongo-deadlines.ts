import { isDuplicateKey } from '@keel/core/mongodb';
import type { Collection, Db } from 'mongodb';
import type { Deadline, Deadlines } from './deadlines.js';
import { deadlineKeyOf } from './deadlines.js';

interface DeadlineDocument {
  _id: string;
  tenantId: string;
  id?: string;
  /** The id field of documents written before deadlines were shared (run_deadlines). */
  runId?: string;
  dueAt: string;
}

/** One collection of deadlines next to the log: an insert that the `_id` lets succeed once (no upsert on FerretDB). */
export class MongoDeadlines implements Deadlines {
  readonly #entries: Collection<DeadlineDocument>;

  /** `collection`: `run_deadlines`, `client_call_deadlines`. */
  constructor(db: Db, collection: string) {
    this.#entries = db.collection<DeadlineDocument>(collection);
  }

  async record(deadline: Deadline): Promise<void> {
    try {
      await this.#entries.insertOne({ _id: deadlineKeyOf(deadline.tenantId, deadline.id), ...deadline });
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
  }

  async remove(tenantId: string, id: string): Promise<void> {
    await this.#entries.deleteOne({ _id: deadlineKeyOf(tenantId, id) });
  }

  async all(): Promise<Deadline[]> {
    const documents = await this.#entries.find({}).toArray();
    return documents.flatMap(({ tenantId, id, runId, dueAt }) => {
      const named = id ?? runId;
      return named === undefined ? [] : [{ tenantId, id: named, dueAt }];
    });
  }
}
