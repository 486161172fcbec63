import type { EventStoreAdapter } from '@keel/core';
import { DataKeyring, EventSealer, InMemoryDataKeyStore, sealingStore } from '@keel/core';
import type { DataKeyStore } from '@keel/core';
import {
  CONVERSATION_CATEGORY,
  CONVERSATION_DELETED,
  RUN_CATEGORY,
  RUN_ERASED,
  TOOL_CALL_CATEGORY,
} from '@keel/events';
import { randomBytes } from 'node:crypto';
import type { KeelConfig } from './config.js';
import { readEnv } from './env/env-check.js';
import type { KeelLogger } from './logger.js';

/** What erasing a conversation needs of the infrastructure. */
export interface ConversationErasure {
  /** Whether conversations' content is sealed (KEEL_MASTER_KEY is set). */
  readonly sealing: boolean;
  /**
   * Destroys the stream's data key and deletes its snapshots: its sealed content is unreadable
   * everywhere from now on (log, snapshots, the bus's retained messages). Idempotent.
   */
  erase(tenantId: string, streamName: string): Promise<void>;
  /** Whether the stream's key was destroyed, asked of the key store now (not this process's cache). */
  isErased(tenantId: string, streamName: string): Promise<boolean>;
  /**
   * A value a service keeps beside the log about a conversation (a tool call's outcome), sealed
   * with the conversation's key and bound to `purpose`; undefined once the key is destroyed
   * (keep nothing). As it is when conversations are not sealed.
   */
  sealFor(tenantId: string, conversationId: string, purpose: string, value: unknown): Promise<unknown>;
  /** The value `sealFor` sealed; undefined once the conversation's key is destroyed. */
  openFor(tenantId: string, conversationId: string, purpose: string, stored: unknown): Promise<unknown>;
  /**
   * Brings the stream's data key into this process's keyring (never makes one), so its events
   * published next open as they arrive on a watch (which never fetches a key): the gateway asks
   * while a turn is submitted, so the turn's events reach its feed without a read of the log.
   */
  holdKey?(tenantId: string, streamName: string): Promise<void>;
}

const CONVERSATION_PREFIX = `${CONVERSATION_CATEGORY}-`;
const TOOL_CALL_PREFIX = `${TOOL_CALL_CATEGORY}-`;
const RUN_PREFIX = `${RUN_CATEGORY}-`;

/**
 * Whose key seals an event: a conversation's events its own; a tool call's execution stream
 * (`toolcall-…`, its result) the conversation its data names (`conversationId`, kept in clear); a
 * team run's stream (`run-…`: its input, its tasks' inputs and outputs, copies of its members'
 * conversations) a key of its own, so the log and the bus never hold it in clear.
 */
export const conversationKeyStream = ({
  streamName,
  data,
}: {
  streamName: string;
  data: unknown;
}): string | undefined => {
  if (streamName.startsWith(CONVERSATION_PREFIX) || streamName.startsWith(RUN_PREFIX)) return streamName;
  if (!streamName.startsWith(TOOL_CALL_PREFIX) || typeof data !== 'object' || data === null) return undefined;
  const { conversationId } = data as { conversationId?: unknown };
  return typeof conversationId === 'string' ? `${CONVERSATION_PREFIX}${conversationId}` : undefined;
};

/**
 * The sealing of conversation streams for one process: with KEEL_MASTER_KEY, every conversation's
 * content is sealed under its own data key (kept sealed with the master key in `data_keys`);
 * without it nothing new is sealed (a warning says erasure then leaves content in the log), and
 * sealed content does not open.
 */
export const conversationSealing = async (
  config: KeelConfig,
  rawStore: EventStoreAdapter,
  logger: KeelLogger,
): Promise<{
  store: EventStoreAdapter;
  sealer: EventSealer;
  erasure: ConversationErasure;
  /** Connect it to the bus's ephemeral channel: a key destroyed anywhere is forgotten here at once. */
  keyring: DataKeyring;
}> => {
  const masterKey = readEnv('KEEL_MASTER_KEY');
  const sealing = typeof masterKey === 'string';
  if (!sealing)
    logger.warn(
      'KEEL_MASTER_KEY is not set: conversations are not sealed, so deleting one leaves its content in the log',
    );
  const keys = await dataKeyStore(config, rawStore);
  const keyring = new DataKeyring(keys, sealing ? Buffer.from(masterKey, 'base64') : randomBytes(32));
  const sealer = new EventSealer({
    keyring,
    keyStream: (event) => (sealing ? conversationKeyStream(event) : undefined),
    erasureType: [CONVERSATION_DELETED, RUN_ERASED],
  });
  const erasure: ConversationErasure = {
    sealing,
    async erase(tenantId, streamName) {
      await keyring.destroy(tenantId, streamName);
      await rawStore.snapshots.delete(tenantId, streamName);
    },
    isErased: (tenantId, streamName) => keyring.isDestroyed(tenantId, streamName),
    sealFor: async (tenantId, conversationId, purpose, value) => {
      if (!sealing) return value;
      const keyStream = `${CONVERSATION_PREFIX}${conversationId}`;
      return sealer.sealValue(tenantId, keyStream, value, `${purpose}|${tenantId}|${keyStream}`);
    },
    openFor: (tenantId, conversationId, purpose, stored) => {
      const keyStream = `${CONVERSATION_PREFIX}${conversationId}`;
      return sealer.openValue(tenantId, keyStream, stored, `${purpose}|${tenantId}|${keyStream}`);
    },
    holdKey: async (tenantId, streamName) => {
      if (sealing) await keyring.keyFor(tenantId, streamName);
    },
  };
  return { store: sealingStore(rawStore, sealer), sealer, erasure, keyring };
};

const dataKeyStore = async (config: KeelConfig, store: EventStoreAdapter): Promise<DataKeyStore> => {
  if (config.mongodbUrl === undefined) return new InMemoryDataKeyStore();
  const mongo = await import('@keel/core/mongodb');
  if (!(store instanceof mongo.MongoEventStore)) return new InMemoryDataKeyStore();
  return new mongo.MongoDataKeyStore(store.db);
};
