export type { KeelErrorCode, KeelErrorKind } from './errors/index.js';
export {
  AlreadyExistsError,
  BudgetExceededError,
  ConcurrencyError,
  ConflictError,
  EventTooLargeError,
  KEEL_ERROR_KIND_KEY,
  KeelError,
  NotFoundError,
  PermissionDeniedError,
  PreconditionError,
  ResourceExhaustedError,
  UnauthenticatedError,
  UnavailableError,
  ValidationError,
  isRetryable,
  kindOf,
  messageOf,
} from './errors/index.js';
export type {
  Actor,
  EventData,
  EventMetadata,
  EventOfType,
  RecordedEvent,
  StreamNameParts,
} from './typing/index.js';
export {
  assertTenantId,
  canonicalJson,
  exceedsJsonDepth,
  hasOwnKey,
  isEvent,
  ownValue,
  parseStreamName,
  streamName,
  uuidv7,
  withOwn,
} from './typing/index.js';
export type {
  AppendOptions,
  AppendResult,
  AppendWatch,
  CommitNotices,
  EventStore,
  EventStoreAdapter,
  ExpectedVersion,
  LogSequencer,
  PlacedPage,
  PreparedEvent,
  ReadAllOptions,
  ReadAllPage,
  ReadStreamOptions,
  SequenceOptions,
  Snapshot,
  SnapshotStore,
  TenantScope,
  Upcaster,
} from './event-store/index.js';
export {
  AppendSignal,
  COMMIT_SIZE_LIMIT_BYTES,
  EVENT_SIZE_LIMIT_BYTES,
  InMemoryEventStore,
  Upcasters,
  upcastingReads,
  prepareAppend,
  versionMismatch,
} from './event-store/index.js';
export type {
  Consumer,
  ConsumerFilter,
  ConsumerOptions,
  DeadLetter,
  DeadLetterStore,
  Delivery,
  DeliveryObserver,
  DeliveryOutcome,
  EphemeralChannel,
  EphemeralKind,
  EphemeralMessage,
  EphemeralScope,
  EphemeralSubscription,
  EphemeralTopic,
  EventBus,
  EventHandler,
  InMemoryEventBusOptions,
  Inbox,
  WatchedStreamsOptions,
  WatchingBus,
  WatchMark,
} from './bus/index.js';
export {
  HeardVersions,
  WatchedStreams,
  InMemoryDeadLetters,
  InMemoryEphemeralChannel,
  InMemoryEventBus,
  InMemoryInbox,
  checkEphemeralTopic,
} from './bus/index.js';
export type {
  CommandHandlerOptions,
  Decider,
  Evolver,
  HandleOptions,
  HandledCommand,
  LoadedState,
} from './decider/index.js';
export { CommandHandler, asDecided, fold, foldRecorded } from './decider/index.js';
export type {
  CheckpointStore,
  LeaseStore,
  OutboxRelayOptions,
  RelayStats,
  RelayWakeups,
} from './outbox/index.js';
export { InMemoryCheckpointStore, InMemoryLeaseStore, OutboxRelay } from './outbox/index.js';
export type { RateLimitDecision, RateLimitPolicy, RateLimiter } from './rate-limit/index.js';
export { InMemoryRateLimiter, decisionOf, unlimited, windowOf } from './rate-limit/index.js';
export type { IdempotencyClaim, IdempotencyStore } from './idempotency/index.js';
export { IDEMPOTENCY_PENDING_MS, IDEMPOTENCY_TTL_MS, InMemoryIdempotencyStore } from './idempotency/index.js';
export { sleep } from './time/index.js';
export type { LogPort } from './logging/index.js';
export { stderrLog } from './logging/index.js';
export type { DataKey, DataKeyStore, SealedContent, SealingOptions, StoredDataKey } from './sealing/index.js';
export {
  DataKeyring,
  ERASED_EVENT_TYPE,
  EventSealer,
  InMemoryDataKeyStore,
  SEALED_FIELD,
  SealingEventBus,
  clearPartAsWritten,
  dataKeyId,
  isClearField,
  sealingDeadLetters,
  sealingStore,
  splitContent,
} from './sealing/index.js';
