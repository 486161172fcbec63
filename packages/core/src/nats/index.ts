export { NatsEventBus } from './nats-event-bus.js';
export { STREAM_OWNERS_BUCKET } from './stream-owner.js';
export type { NatsEventBusOptions } from './nats-event-bus.js';
export { KeelHeaders } from './nats-headers.js';
export {
  DEFAULT_SUBJECT_PREFIX,
  decodeSubjectToken,
  encodeSubjectToken,
  eventSubject,
  filterSubject,
} from './subjects.js';
export { DEFAULT_RATE_LIMIT_BUCKET, NatsRateLimiter } from './nats-rate-limiter.js';
export type { NatsRateLimiterOptions } from './nats-rate-limiter.js';
