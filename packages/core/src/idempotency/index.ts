export * from './idempotency-store.js';
export * from './in-memory-idempotency-store.js';
