export type {
  Consumer,
  ConsumerFilter,
  ConsumerOptions,
  DeadLetter,
  DeadLetterStore,
  Delivery,
  DeliveryObserver,
  DeliveryOutcome,
  EventBus,
  EventHandler,
  Inbox,
} from './event-bus.js';
export type { InMemoryEventBusOptions } from './in-memory-bus.js';
export { InMemoryEventBus } from './in-memory-bus.js';
export { InMemoryInbox } from './in-memory-inbox.js';
export { InMemoryDeadLetters } from './in-memory-dead-letters.js';
export type {
  EphemeralChannel,
  EphemeralKind,
  EphemeralMessage,
  EphemeralScope,
  EphemeralSubscription,
  EphemeralTopic,
} from './ephemeral.js';
export { InMemoryEphemeralChannel, checkEphemeralTopic } from './ephemeral.js';
export type { WatchedStreamsOptions, WatchingBus, WatchMark } from './watched-streams.js';
export { HeardVersions, WatchedStreams } from './watched-streams.js';
