export * from './errors/index.js';
export * from './typing/index.js';
export * from './event-store/index.js';
export * from './bus/index.js';
export * from './decider/index.js';
export * from './outbox/index.js';
export * from './rate-limit/index.js';
export * from './idempotency/index.js';
