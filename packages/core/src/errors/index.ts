export * from './keel-error.js';
