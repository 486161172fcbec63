export * from './decider.js';
export * from './command-handler.js';
