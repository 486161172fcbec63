// Runs the IdempotencyStore contract suite (its assertions are in idempotency-store.contract.ts) on this adapter.
import { describeIdempotencyStoreContract } from './idempotency-store.contract.js';
import { InMemoryIdempotencyStore } from './in-memory-idempotency-store.js';

describeIdempotencyStoreContract('in memory', async () => {
  let now = Date.parse('2026-01-01T00:00:00Z');
  return {
    store: new InMemoryIdempotencyStore(() => now),
    advance: (ms) => {
      now += ms;
    },
    now: () => now,
    cleanup: async () => {},
  };
});
