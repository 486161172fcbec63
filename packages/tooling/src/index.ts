export * from './json-schema.js';
export * from './builtins/index.js';
export * from './args-validator.js';
export * from './safe-pattern.js';
export * from './approval-policy.js';
