export * from './decider-spec.js';
