export * from './event-store.js';
