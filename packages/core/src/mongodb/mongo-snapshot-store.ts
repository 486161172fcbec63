import type { Collection } from 'mongodb';
import type { Snapshot, SnapshotStore } from '../event-store/index.js';

interface SnapshotDocument {
  _id: string;
  t: string;
  s: string;
  name: string;
  version: number;
  /** The state as JSON text, for the same reason as event payloads. */
  state: string;
  at: string;
  /** True when the version was known to end a commit at save time (reads may then walk from it). */
  b?: boolean;
}

/** How the event store tells its snapshot store about commit boundaries, and learns of them. */
export interface BoundaryHooks {
  isBoundary(tenantId: string, streamName: string, version: number): boolean;
  boundaryLoaded(tenantId: string, streamName: string, version: number): void;
}

/**
 * Snapshots on MongoDB: a cache beside the log, safe to delete at any time. A save replaces the
 * stream's snapshot unconditionally: of two saves at once the older version may stay (a load
 * then folds more events from the log, the same state), and two first saves at once answer one
 * with a duplicate key, which every caller ignores (a snapshot not written costs only time).
 */
export class MongoSnapshotStore implements SnapshotStore {
  constructor(
    private readonly snapshots: Collection<SnapshotDocument>,
    private readonly hooks?: BoundaryHooks,
  ) {}

  async init(): Promise<void> {
    await this.snapshots.createIndex({ t: 1, s: 1 }, { name: 'stream' });
  }

  async load<State>(
    tenantId: string,
    streamName: string,
    name: string,
  ): Promise<Snapshot<State> | undefined> {
    const doc = await this.snapshots.findOne({ _id: JSON.stringify([tenantId, streamName, name]) });
    if (doc?.b) this.hooks?.boundaryLoaded(tenantId, streamName, doc.version);
    return doc ? { name: doc.name, version: doc.version, state: JSON.parse(doc.state) as State } : undefined;
  }

  async save<State>(tenantId: string, streamName: string, snapshot: Snapshot<State>): Promise<void> {
    const _id = JSON.stringify([tenantId, streamName, snapshot.name]);
    await this.snapshots.replaceOne(
      { _id },
      {
        t: tenantId,
        s: streamName,
        name: snapshot.name,
        version: snapshot.version,
        state: JSON.stringify(snapshot.state),
        at: new Date().toISOString(),
        b: this.hooks?.isBoundary(tenantId, streamName, snapshot.version) ?? false,
      },
      { upsert: true },
    );
  }

  async delete(tenantId?: string, streamName?: string): Promise<void> {
    const filter =
      tenantId === undefined
        ? {}
        : streamName === undefined
          ? { t: tenantId }
          : { t: tenantId, s: streamName };
    await this.snapshots.deleteMany(filter);
  }
}
