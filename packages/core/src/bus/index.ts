export * from './event-bus.js';
