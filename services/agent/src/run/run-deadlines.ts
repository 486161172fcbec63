import { isDuplicateKey } from '@keel/core/mongodb';
import type { Collection, Db } from 'mongodb';

/** A running run's deadline, kept so that its timeout fires after a restart too. */
export interface RunDeadline {
  tenantId: string;
  runId: string;
  dueAt: string;
}

/**
 * The deadlines of the runs that have not ended: recorded when a run is first seen running,
 * dropped when it ends, and all read when the run manager starts, to arm its timers again.
 */
export interface RunDeadlines {
  record(deadline: RunDeadline): Promise<void>;
  remove(tenantId: string, runId: string): Promise<void>;
  all(): Promise<RunDeadline[]>;
}

const keyOf = (tenantId: string, runId: string): string => `${tenantId}|${runId}`;

/** In memory (dev mode, unit tests): lost with the process, as the in-memory log is. */
export class InMemoryRunDeadlines implements RunDeadlines {
  private readonly entries = new Map<string, RunDeadline>();

  record(deadline: RunDeadline): Promise<void> {
    this.entries.set(keyOf(deadline.tenantId, deadline.runId), deadline);
    return Promise.resolve();
  }

  remove(tenantId: string, runId: string): Promise<void> {
    this.entries.delete(keyOf(tenantId, runId));
    return Promise.resolve();
  }

  all(): Promise<RunDeadline[]> {
    return Promise.resolve([...this.entries.values()]);
  }
}

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
      await this.#entries.insertOne({ _id: keyOf(deadline.tenantId, deadline.runId), ...deadline });
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
  }

  async remove(tenantId: string, runId: string): Promise<void> {
    await this.#entries.deleteOne({ _id: keyOf(tenantId, runId) });
  }

  async all(): Promise<RunDeadline[]> {
    const documents = await this.#entries.find({}).toArray();
    return documents.map(({ tenantId, runId, dueAt }) => ({ tenantId, runId, dueAt }));
  }
}
