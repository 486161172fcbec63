export type { CheckpointStore, LeaseStore, RelayWakeups } from './ports.js';
export { InMemoryCheckpointStore, InMemoryLeaseStore } from './ports.js';
export type { OutboxRelayOptions, RelayStats } from './outbox-relay.js';
export { OutboxRelay } from './outbox-relay.js';
