export * from './event-store.js';
export * from './sequencing.js';
export * from './upcasters.js';
export * from './append-guard.js';
export * from './in-memory-event-store.js';
export * from './append-signal.js';
