export * from './conversation-events.js';
export * from './tenant-config-events.js';
