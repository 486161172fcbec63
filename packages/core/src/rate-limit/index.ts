export * from './rate-limiter.js';
export * from './in-memory-rate-limiter.js';
