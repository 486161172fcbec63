// Runs the RateLimiter contract suite (its assertions are in rate-limiter.contract.ts) on this adapter.
import { InMemoryRateLimiter } from './in-memory-rate-limiter.js';
import { describeRateLimiterContract } from './rate-limiter.contract.js';

// One process: the "second instance" is the same counters, as two callers in one gateway.
describeRateLimiterContract('in memory', (policy, now) => {
  const limiter = new InMemoryRateLimiter(policy, now);
  return Promise.resolve({ limiter, second: limiter, cleanup: () => limiter.close() });
});
