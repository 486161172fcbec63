export * from './event-bus.js';
export * from './in-memory-bus.js';
export * from './in-memory-inbox.js';
export * from './in-memory-dead-letters.js';
export { stderrBusLogger } from './bus-logger.js';
export type { BusLogger } from './bus-logger.js';
export * from './ephemeral.js';
