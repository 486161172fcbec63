export type { Actor, EventData, EventMetadata, EventOfType, RecordedEvent } from './event.js';
export { isEvent } from './event.js';
export type { StreamNameParts } from './stream-name.js';
export { assertTenantId, parseStreamName, streamName } from './stream-name.js';
export { uuidv7 } from './ids.js';
export { hasOwnKey, ownValue, withOwn } from './own-keys.js';
export { exceedsJsonDepth } from './json-depth.js';
export { canonicalJson } from './canonical-json.js';
