export * from './event.js';
export * from './stream-name.js';
export * from './ids.js';
export * from './own-keys.js';
export * from './json-depth.js';
export * from './canonical-json.js';
