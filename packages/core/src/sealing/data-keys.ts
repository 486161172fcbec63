import { randomBytes } from 'node:crypto';
import { PreconditionError } from '../errors/index.js';
import type { SealedContent } from './envelope.js';
import { openText, sealText } from './envelope.js';

/** A stream's data key as stored: sealed with the master key, or destroyed (a tombstone, kept). */
export type StoredDataKey = { sealed: Extract<SealedContent, { v: 1 }> } | { destroyedAt: string };

/**
 * Where streams' data keys live (their own collection on MongoDB). A destroyed key stays a
 * tombstone: the stream never gets a new key, so content written after the erasure is dropped.
 */
export interface DataKeyStore {
  get(tenantId: string, streamName: string): Promise<StoredDataKey | undefined>;
  /** Stores `key` unless the stream has a key (or a tombstone); answers what is stored now. */
  create(tenantId: string, streamName: string, key: StoredDataKey): Promise<StoredDataKey>;
  /** Replaces the stream's key by a tombstone (also when it had none); idempotent. */
  destroy(tenantId: string, streamName: string, at: string): Promise<void>;
}

/** Data keys in memory (the dev mode without MongoDB; unit tests). */
export class InMemoryDataKeyStore implements DataKeyStore {
  readonly keys = new Map<string, StoredDataKey>();

  get(tenantId: string, streamName: string): Promise<StoredDataKey | undefined> {
    return Promise.resolve(this.keys.get(dataKeyId(tenantId, streamName)));
  }

  create(tenantId: string, streamName: string, key: StoredDataKey): Promise<StoredDataKey> {
    const id = dataKeyId(tenantId, streamName);
    const stored = this.keys.get(id) ?? key;
    this.keys.set(id, stored);
    return Promise.resolve(stored);
  }

  destroy(tenantId: string, streamName: string, at: string): Promise<void> {
    this.keys.set(dataKeyId(tenantId, streamName), { destroyedAt: at });
    return Promise.resolve();
  }
}

/** The id of a stream's data key: tenant and stream, unambiguous (JSON). */
export const dataKeyId = (tenantId: string, streamName: string): string =>
  JSON.stringify([tenantId, streamName]);

/** What a keyring answers for a stream: its key, or that it was destroyed (or never made). */
export type DataKey = Buffer | 'destroyed' | 'none';

/** Keys this process remembers (least recently used go first). */
const CACHE_CAPACITY = 10_000;

/**
 * A process's view of the data keys: makes a stream's key on its first sealed write (random 32
 * bytes, stored sealed with the 32-byte master key, bound to tenant and stream), opens stored
 * ones, and remembers them, so the hot path asks the store once per stream and process.
 * Destroying is final; a process that remembered the key forgets it when told (`forget`, on the
 * erasure event), and the store's tombstone is what every other process finds.
 */
export class DataKeyring {
  readonly #cache = new Map<string, Promise<DataKey>>();

  constructor(
    private readonly store: DataKeyStore,
    private readonly masterKey: Buffer,
  ) {
    if (masterKey.length !== 32) throw new PreconditionError('the master key must be 32 bytes');
  }

  /** The stream's key for reading: never makes one. */
  keyFor(tenantId: string, streamName: string): Promise<DataKey> {
    return this.#remembered(tenantId, streamName, false);
  }

  /** The stream's key for writing: made on the stream's first sealed write; `destroyed` stays so. */
  keyToWrite(tenantId: string, streamName: string): Promise<DataKey> {
    return this.#remembered(tenantId, streamName, true);
  }

  /** The remembered key, without asking the store (the commit notices' synchronous path). */
  cached(tenantId: string, streamName: string): Buffer | undefined {
    return this.#settled.get(dataKeyId(tenantId, streamName));
  }

  /** Whether the stream's key is destroyed, asked of the store now (not the cache). */
  async isDestroyed(tenantId: string, streamName: string): Promise<boolean> {
    const stored = await this.store.get(tenantId, streamName);
    return stored !== undefined && 'destroyedAt' in stored;
  }

  /** Destroys the stream's key: its sealed content can never be opened again, by any process. */
  async destroy(tenantId: string, streamName: string, at = new Date().toISOString()): Promise<void> {
    this.forget(tenantId, streamName);
    await this.store.destroy(tenantId, streamName, at);
    this.forget(tenantId, streamName);
  }

  /** Drops this process's memory of the stream's key. */
  forget(tenantId: string, streamName: string): void {
    const id = dataKeyId(tenantId, streamName);
    this.#cache.delete(id);
    this.#settled.delete(id);
  }

  readonly #settled = new Map<string, Buffer>();

  #remembered(tenantId: string, streamName: string, create: boolean): Promise<DataKey> {
    const id = dataKeyId(tenantId, streamName);
    const known = this.#cache.get(id);
    if (known) {
      this.#cache.delete(id);
      this.#cache.set(id, known);
      return known.then((key) =>
        key === 'none' && create ? this.#refresh(id, tenantId, streamName, create) : key,
      );
    }
    return this.#refresh(id, tenantId, streamName, create);
  }

  #refresh(id: string, tenantId: string, streamName: string, create: boolean): Promise<DataKey> {
    const loading = this.#load(tenantId, streamName, create);
    this.#cache.set(id, loading);
    loading.then(
      (key) => {
        if (Buffer.isBuffer(key)) this.#settled.set(id, key);
        // "none" is not kept: another process may make the key at any time.
        if (key === 'none' && this.#cache.get(id) === loading) this.#cache.delete(id);
      },
      () => {
        if (this.#cache.get(id) === loading) this.#cache.delete(id);
      },
    );
    while (this.#cache.size > CACHE_CAPACITY) {
      const oldest = this.#cache.keys().next().value as string;
      this.#cache.delete(oldest);
      this.#settled.delete(oldest);
    }
    return loading;
  }

  async #load(tenantId: string, streamName: string, create: boolean): Promise<DataKey> {
    // A writer inserts a fresh key at once (one round trip for a new conversation); the store
    // answers the key already there (or its tombstone) when another process was first.
    const stored = create
      ? await this.store.create(tenantId, streamName, { sealed: this.#freshKey(tenantId, streamName) })
      : await this.store.get(tenantId, streamName);
    if (stored === undefined) return 'none';
    if ('destroyedAt' in stored) return 'destroyed';
    return this.#open(tenantId, streamName, stored.sealed);
  }

  #freshKey(tenantId: string, streamName: string): Extract<SealedContent, { v: 1 }> {
    const fresh = randomBytes(32).toString('base64');
    return sealText(this.masterKey, fresh, keyContext(tenantId, streamName)) as Extract<
      SealedContent,
      { v: 1 }
    >;
  }

  #open(tenantId: string, streamName: string, sealed: Extract<SealedContent, { v: 1 }>): Buffer {
    try {
      return Buffer.from(openText(this.masterKey, sealed, keyContext(tenantId, streamName)), 'base64');
    } catch (error) {
      // Never the key or the sealed value in the message: which stream is enough.
      throw new PreconditionError(
        `the data key of ${streamName} does not open with this master key (is KEEL_MASTER_KEY the same on every service?)`,
        { cause: error },
      );
    }
  }
}

const keyContext = (tenantId: string, streamName: string): string => `data-key|${tenantId}|${streamName}`;
