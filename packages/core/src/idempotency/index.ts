export type { IdempotencyClaim, IdempotencyStore } from './idempotency-store.js';
export { IDEMPOTENCY_PENDING_MS, IDEMPOTENCY_TTL_MS } from './idempotency-store.js';
export { InMemoryIdempotencyStore } from './in-memory-idempotency-store.js';
