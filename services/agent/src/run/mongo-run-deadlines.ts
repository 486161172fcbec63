import { isDuplicateKey } from '@keel/core/mongodb';
import type { Collection, Db } from 'mongodb';
import type { RunDeadline, RunDeadlines } from './run-deadlines.js';
import { deadlineKeyOf } from './run-deadlines.js';

interface DeadlineDocument extends RunDeadline {
  _id: string;
}

/** `run_deadlines` next to the log: an insert that the `_id` lets succeed once (no upsert on FerretDB). */
export class MongoRunDeadlines implements RunDeadlines {
  readonly #entries: Collection<DeadlineDocument>;

  constructor(db: Db) {
    this.#entries = db.collection<DeadlineDocument>('run_deadlines');
  }

  async record(deadline: RunDeadline): Promise<void> {
    try {
      await this.#entries.insertOne({ _id: deadlineKeyOf(deadline.tenantId, deadline.runId), ...deadline });
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
  }

  async remove(tenantId: string, runId: string): Promise<void> {
    await this.#entries.deleteOne({ _id: deadlineKeyOf(tenantId, runId) });
  }

  async all(): Promise<RunDeadline[]> {
    const documents = await this.#entries.find({}).toArray();
    return documents.map(({ tenantId, runId, dueAt }) => ({ tenantId, runId, dueAt }));
  }
}
