export type { DataKey, DataKeyStore, StoredDataKey } from './data-keys.js';
export { DataKeyring, InMemoryDataKeyStore, dataKeyId } from './data-keys.js';
export type { SealedContent } from './envelope.js';
export { SEALED_FIELD, isClearField, splitContent } from './envelope.js';
export type { SealingOptions } from './event-sealer.js';
export { ERASED_EVENT_TYPE, EventSealer, clearPartAsWritten } from './event-sealer.js';
export { SealingEventBus, sealingDeadLetters, sealingStore } from './sealing-decorators.js';
