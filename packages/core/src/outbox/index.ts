export * from './ports.js';
export * from './outbox-relay.js';
