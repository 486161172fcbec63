export * from './event-bus.js';
export * from './in-memory-bus.js';
export * from './in-memory-inbox.js';
export * from './in-memory-dead-letters.js';
export * from './ephemeral.js';
