export * from './conversation-events.js';
export * from './tenant-config-events.js';
export * from './tool-events.js';
export * from './budget-events.js';
export * from './upcasters.js';
export * from './run-events.js';
export * from './model-events.js';
export * from './end-user.js';
