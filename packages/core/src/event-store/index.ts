export type {
  AppendOptions,
  AppendResult,
  EventStore,
  ExpectedVersion,
  ReadAllOptions,
  ReadAllPage,
  ReadStreamOptions,
  Snapshot,
  SnapshotStore,
  TenantScope,
} from './event-store.js';
export { COMMIT_SIZE_LIMIT_BYTES, EVENT_SIZE_LIMIT_BYTES } from './event-store.js';
export type {
  AppendWatch,
  CommitNotices,
  EventStoreAdapter,
  LogSequencer,
  PlacedPage,
  SequenceOptions,
} from './sequencing.js';
export type { Upcaster } from './upcasters.js';
export { Upcasters, upcastingReads } from './upcasters.js';
export type { PreparedEvent } from './append-guard.js';
export { prepareAppend, versionMismatch } from './append-guard.js';
export { InMemoryEventStore } from './in-memory-event-store.js';
export { AppendSignal } from './append-signal.js';
