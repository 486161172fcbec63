export * from './decider-spec.js';
export * from './eventually.js';
