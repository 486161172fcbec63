export * from './mongo-event-store.js';
export * from './mongo-snapshot-store.js';
export * from './mongo-errors.js';
export * from './ensure-indexes.js';
export * from './mongo-checkpoints.js';
export * from './mongo-inbox.js';
export * from './mongo-dead-letters.js';
export type { CommitDocument } from './commit-document.js';
export { commitKey } from './commit-document.js';
