import { ConcurrencyError, ValidationError } from '../errors/index.js';
import type { EventData, RecordedEvent } from '../typing/index.js';
import { uuidv7 } from '../typing/index.js';
import { AppendSignal } from './append-signal.js';
import type { PreparedEvent } from './append-guard.js';
import { prepareAppend, versionMismatch } from './append-guard.js';
import type {
  AppendOptions,
  AppendResult,
  ReadAllOptions,
  ReadAllPage,
  ReadStreamOptions,
  Snapshot,
  SnapshotStore,
} from './event-store.js';
import type { EventStoreAdapter } from './sequencing.js';

interface StoredCommit {
  commitId: string;
  tenantId: string;
  streamName: string;
  fromVersion: number;
  events: RecordedEvent[];
  /** JSON text of each event as written, so reads return fresh copies (no shared references). */
  json: string;
}

const key = (tenantId: string, streamName: string): string => `${tenantId}\u0000${streamName}`;

const revive = (commit: StoredCommit): RecordedEvent[] => JSON.parse(commit.json) as RecordedEvent[];

/** Snapshots kept in memory, as JSON text so callers never share state objects with the cache. */
class InMemorySnapshotStore implements SnapshotStore {
  private readonly snapshots = new Map<string, string>();

  async load<State>(
    tenantId: string,
    streamName: string,
    name: string,
  ): Promise<Snapshot<State> | undefined> {
    const json = this.snapshots.get(`${key(tenantId, streamName)}\u0000${name}`);
    return json === undefined ? undefined : (JSON.parse(json) as Snapshot<State>);
  }

  async save<State>(tenantId: string, streamName: string, snapshot: Snapshot<State>): Promise<void> {
    this.snapshots.set(`${key(tenantId, streamName)}\u0000${snapshot.name}`, JSON.stringify(snapshot));
  }

  async delete(tenantId?: string, streamName?: string): Promise<void> {
    if (tenantId === undefined) return this.snapshots.clear();
    const prefix = streamName === undefined ? `${tenantId}\u0000` : `${key(tenantId, streamName)}\u0000`;
    for (const k of [...this.snapshots.keys()]) if (k.startsWith(prefix)) this.snapshots.delete(k);
  }
}

/** A commit's prepared events as the log records them: consecutive versions and global positions, one commit time. */
const recordedOf = (
  prepared: readonly PreparedEvent[],
  at: { tenantId: string; streamName: string; commitId: string; fromVersion: number; fromPosition: number },
): RecordedEvent[] => {
  const recordedAt = new Date().toISOString();
  return prepared.map((event, index) => ({
    eventId: event.eventId,
    type: event.type,
    data: JSON.parse(event.dataJson) as unknown,
    metadata: JSON.parse(event.metadataJson) as RecordedEvent['metadata'],
    tenantId: at.tenantId,
    streamName: at.streamName,
    version: at.fromVersion + index,
    globalPosition: at.fromPosition + index,
    commitId: at.commitId,
    recordedAt,
  }));
};

/** The event log in process memory: the dev mode's store, held to the same contract as MongoDB's. */
export class InMemoryEventStore implements EventStoreAdapter {
  private readonly streams = new Map<string, StoredCommit[]>();
  private readonly commitsById = new Map<string, StoredCommit>();
  private readonly global: RecordedEvent[] = [];
  private readonly appended = new AppendSignal();
  readonly snapshots: SnapshotStore = new InMemorySnapshotStore();

  async append(
    tenantId: string,
    streamName: string,
    events: EventData[],
    options: AppendOptions = {},
  ): Promise<AppendResult> {
    const expectedVersion = options.expectedVersion ?? 'any';
    const prepared = prepareAppend(tenantId, streamName, events, expectedVersion);
    const commitId = options.commitId ?? uuidv7();

    const previous = this.commitsById.get(key(tenantId, commitId));
    if (previous) return this.replayResult(previous, tenantId, streamName);

    const commits = this.streams.get(key(tenantId, streamName)) ?? [];
    const last = commits[commits.length - 1];
    const actual = last ? last.fromVersion + last.events.length - 1 : 0;
    if (versionMismatch(expectedVersion, actual))
      throw new ConcurrencyError(streamName, expectedVersion, actual);

    const recorded = recordedOf(prepared, {
      tenantId,
      streamName,
      commitId,
      fromVersion: actual + 1,
      fromPosition: this.global.length + 1,
    });
    const commit: StoredCommit = {
      commitId,
      tenantId,
      streamName,
      fromVersion: actual + 1,
      events: recorded,
      json: JSON.stringify(recorded),
    };
    commits.push(commit);
    this.streams.set(key(tenantId, streamName), commits);
    this.commitsById.set(key(tenantId, commitId), commit);
    this.global.push(...recorded);
    this.appended.notify(revive(commit));
    return {
      commitId,
      fromVersion: commit.fromVersion,
      nextExpectedVersion: actual + recorded.length,
      events: revive(commit),
      idempotentReplay: false,
    };
  }

  async read(
    tenantId: string,
    streamName: string,
    options: ReadStreamOptions = {},
  ): Promise<RecordedEvent[]> {
    const from = options.fromVersion ?? 1;
    const to = options.toVersion ?? Number.MAX_SAFE_INTEGER;
    const commits = this.streams.get(key(tenantId, streamName)) ?? [];
    return commits
      .filter((c) => c.fromVersion + c.events.length - 1 >= from && c.fromVersion <= to)
      .flatMap(revive)
      .filter((e) => e.version >= from && e.version <= to);
  }

  async streamVersion(tenantId: string, streamName: string): Promise<number> {
    const commits = this.streams.get(key(tenantId, streamName)) ?? [];
    const last = commits[commits.length - 1];
    return last ? last.fromVersion + last.events.length - 1 : 0;
  }

  async readAll(options: ReadAllOptions): Promise<ReadAllPage> {
    const after = options.after ?? 0;
    const limit = options.limit ?? 1000;
    if (!Number.isSafeInteger(after) || after < 0)
      throw new ValidationError('invalid position', { field: 'after' });
    const events: RecordedEvent[] = [];
    let lastPosition = after;
    let lastCommit: string | undefined;
    for (let i = after; i < this.global.length; i++) {
      const event = this.global[i]!;
      // Pages end on a commit boundary, so a commit is never split between two pages.
      if (events.length >= limit && event.commitId !== lastCommit) break;
      lastCommit = event.commitId;
      lastPosition = event.globalPosition!;
      if (options.scope !== 'all-tenants' && event.tenantId !== options.scope.tenantId) continue;
      events.push(structuredClone(event));
    }
    return { events, lastPosition };
  }

  async sequence(): Promise<number> {
    return 0;
  }

  waitForAppend(timeoutMs: number, signal?: AbortSignal, since?: number): Promise<void> {
    return this.appended.wait(timeoutMs, signal, since);
  }

  get appendCount(): number {
    return this.appended.count;
  }

  onCommitted(listener: (events: readonly RecordedEvent[]) => void): () => void {
    return this.appended.onCommitted(listener);
  }

  async close(): Promise<void> {
    this.appended.release();
  }

  private replayResult(commit: StoredCommit, tenantId: string, streamName: string): AppendResult {
    if (commit.tenantId !== tenantId || commit.streamName !== streamName) {
      throw new ValidationError(`commit id ${commit.commitId} was used for another stream`, {
        field: 'commitId',
      });
    }
    return {
      commitId: commit.commitId,
      fromVersion: commit.fromVersion,
      nextExpectedVersion: commit.fromVersion + commit.events.length - 1,
      events: revive(commit),
      idempotentReplay: true,
    };
  }
}
