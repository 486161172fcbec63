import type { EventData, RecordedEvent } from '../typing/index.js';

/**
 * What a writer expects of the stream before its append:
 * `any` (no check), `no_stream` (the stream has no events), `exists` (it has at least one),
 * or an exact version (the stream's last event has that version; 0 means empty).
 */
export type ExpectedVersion = 'any' | 'no_stream' | 'exists' | number;

/** Options of one append. */
export interface AppendOptions {
  expectedVersion?: ExpectedVersion;
  /**
   * Identifies the commit. Retrying an append with the same commit id is idempotent: it returns
   * the first result and writes nothing, whatever the stream's version is now.
   */
  commitId?: string;
}

/** The outcome of an append: the stream's new version and the events as recorded. */
export interface AppendResult {
  commitId: string;
  /** Version of the first event of the commit. */
  fromVersion: number;
  /** Version of the last event of the commit: the expected version of the next append. */
  nextExpectedVersion: number;
  events: RecordedEvent[];
  /** True when this call was a retry of a commit already written. */
  idempotentReplay: boolean;
}

/** Options of a per-stream read. */
export interface ReadStreamOptions {
  /** First version to return (inclusive). Default 1. */
  fromVersion?: number;
  /** Last version to return (inclusive). */
  toVersion?: number;
  /**
   * The `commitId` of an event of this stream the reader holds, reading what came after it
   * (`fromVersion` = its version + 1). A hint, never trusted: a store that reads commit by commit
   * starts from that commit instead of searching for `fromVersion` in the stream; a commit of
   * another stream or tenant, or one not holding `fromVersion - 1` or `fromVersion`, is ignored.
   */
  fromCommit?: string;
}

/** Which tenants a global read covers: one tenant, or all of them for platform consumers. */
export type TenantScope = { tenantId: string } | 'all-tenants';

/** Options of a global (catch-up) read. */
export interface ReadAllOptions {
  /** Return events with a global position strictly greater than this. Default 0 (from the start). */
  after?: number;
  /** At most this many events (whole commits are never split across pages). Default 1000. */
  limit?: number;
  scope: TenantScope;
}

/** One page of the global log. */
export interface ReadAllPage {
  events: RecordedEvent[];
  /** The position to pass as `after` for the next page (the last position read, or `after`). */
  lastPosition: number;
}

/** A cached fold of a stream up to a version; deleting snapshots never changes an answer. */
export interface Snapshot<State = unknown> {
  name: string;
  version: number;
  state: State;
}

/** Snapshot storage, a cache beside the log. */
export interface SnapshotStore {
  load<State>(tenantId: string, streamName: string, name: string): Promise<Snapshot<State> | undefined>;
  save<State>(tenantId: string, streamName: string, snapshot: Snapshot<State>): Promise<void>;
  /** Deletes one stream's snapshots, or every snapshot when no stream is given. */
  delete(tenantId?: string, streamName?: string): Promise<void>;
}

/** Size limits of the log, chosen so one commit fits in one MongoDB document with room to spare. */
export const EVENT_SIZE_LIMIT_BYTES = 1024 * 1024;
export const COMMIT_SIZE_LIMIT_BYTES = 8 * 1024 * 1024;

/**
 * The event log port: every adapter (in-memory, MongoDB) passes the same contract suite. Placing
 * commits in the global log and waking on appends are separate ports (`LogSequencer`,
 * `AppendWatch` in sequencing.ts): a writer or reader does not need them.
 */
export interface EventStore {
  append(
    tenantId: string,
    streamName: string,
    events: EventData[],
    options?: AppendOptions,
  ): Promise<AppendResult>;
  read(tenantId: string, streamName: string, options?: ReadStreamOptions): Promise<RecordedEvent[]>;
  /** The version of the stream's last event, 0 when the stream has none. */
  streamVersion(tenantId: string, streamName: string): Promise<number>;
  /**
   * Reads the global log in order. Only sequenced commits are returned; a reader that resumes
   * from `lastPosition` never skips an event committed later.
   */
  readAll(options: ReadAllOptions): Promise<ReadAllPage>;
  readonly snapshots: SnapshotStore;
  close(): Promise<void>;
}
