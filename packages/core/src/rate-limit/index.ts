export type { RateLimitDecision, RateLimitPolicy, RateLimiter } from './rate-limiter.js';
export { decisionOf, unlimited, windowOf } from './rate-limiter.js';
export { InMemoryRateLimiter } from './in-memory-rate-limiter.js';
