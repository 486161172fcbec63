export * from './conversation-events.js';
