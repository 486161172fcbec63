import { randomBytes } from 'node:crypto';
import { PreconditionError } from '../errors/index.js';
import type { EphemeralChannel, EphemeralSubscription } from '../bus/ephemeral.js';
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

/** How long an opened key is used before the store is asked again, by default. */
export const DATA_KEY_MAX_AGE_MS = 60_000;

/** The ephemeral kind on which a destroyed key is announced to every process. */
const ERASED_KIND = 'erased';

/** Settings of a keyring; the defaults suit production. */
export interface DataKeyringOptions {
  /** How long a key read from the store is used without asking it again (default 60 s). */
  maxAgeMs?: number;
  /** Keys remembered at once (default 10,000); the least recently used go first. */
  capacity?: number;
  now?: () => number;
}

/** One stream's key as this process remembers it: the load, when it began, what it found. */
interface Remembered {
  loading: Promise<DataKey>;
  startedAt: number;
  found?: DataKey;
}

/**
 * A process's view of the data keys: makes a stream's key on its first sealed write (random 32
 * bytes, stored sealed with the 32-byte master key, bound to tenant and stream), opens stored
 * ones, and remembers them, so the hot path asks the store about a stream once per process and
 * `maxAgeMs`, not per use.
 *
 * Invariant (crypto-shredding): once a stream's key is destroyed (its tombstone stored), a process
 * opens that stream's content with a remembered key only until it hears of the destruction, and
 * never for longer than `maxAgeMs` after the read of the store that gave it the key. It hears of
 * it (and forgets the key) when it destroys the key itself, when it reads or is delivered the
 * erasure event, and — once `connect`ed to the bus's ephemeral channel — when any process
 * destroys it (`destroy` announces it after the tombstone is stored, the outbox relay included,
 * so a writer that died first is covered). The announcement is fire-and-forget: one missed while
 * NATS was unreachable costs at most `maxAgeMs`, after which the store's tombstone is found. A
 * load that began before a forget is not remembered. A destroyed key is remembered as such for
 * good (destruction is final).
 */
export class DataKeyring {
  readonly #cache = new Map<string, Remembered>();
  readonly #maxAgeMs: number;
  readonly #capacity: number;
  readonly #now: () => number;
  #channel: EphemeralChannel | undefined;

  constructor(
    private readonly store: DataKeyStore,
    private readonly masterKey: Buffer,
    options: DataKeyringOptions = {},
  ) {
    if (masterKey.length !== 32) throw new PreconditionError('the master key must be 32 bytes');
    this.#maxAgeMs = options.maxAgeMs ?? DATA_KEY_MAX_AGE_MS;
    this.#capacity = Math.max(1, options.capacity ?? CACHE_CAPACITY);
    this.#now = options.now ?? Date.now;
  }

  /**
   * Hears of every key destroyed by any process on the channel (and announces the ones this
   * keyring destroys), so a remembered key is forgotten as soon as it is destroyed anywhere.
   */
  connect(channel: EphemeralChannel): EphemeralSubscription {
    this.#channel = channel;
    const subscription = channel.subscribe({ kind: ERASED_KIND }, ({ topic }) =>
      this.forget(topic.tenantId, topic.conversationId),
    );
    return {
      unsubscribe: () => {
        subscription.unsubscribe();
        if (this.#channel === channel) this.#channel = undefined;
      },
    };
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
    const remembered = this.#cache.get(dataKeyId(tenantId, streamName));
    return remembered && Buffer.isBuffer(remembered.found) && !this.#expired(remembered)
      ? remembered.found
      : undefined;
  }

  /** Whether the stream's key is destroyed, asked of the store now (not the cache). */
  async isDestroyed(tenantId: string, streamName: string): Promise<boolean> {
    const stored = await this.store.get(tenantId, streamName);
    return stored !== undefined && 'destroyedAt' in stored;
  }

  /**
   * Destroys the stream's key: its sealed content can never be opened again, by any process
   * (those connected hear of it at once, the others within their `maxAgeMs`).
   */
  async destroy(tenantId: string, streamName: string, at = new Date().toISOString()): Promise<void> {
    this.forget(tenantId, streamName);
    await this.store.destroy(tenantId, streamName, at);
    this.forget(tenantId, streamName);
    try {
      this.#channel?.publish({ kind: ERASED_KIND, tenantId, conversationId: streamName }, {});
    } catch {
      // Not announced (a closed connection): the others find the tombstone within their maxAgeMs.
    }
  }

  /** Drops this process's memory of the stream's key (a load in progress is not remembered). */
  forget(tenantId: string, streamName: string): void {
    this.#cache.delete(dataKeyId(tenantId, streamName));
  }

  #remembered(tenantId: string, streamName: string, create: boolean): Promise<DataKey> {
    const id = dataKeyId(tenantId, streamName);
    const known = this.#cache.get(id);
    if (known && !this.#expired(known)) {
      this.#cache.delete(id);
      this.#cache.set(id, known);
      return known.loading.then((key) =>
        key === 'none' && create ? this.#refresh(id, tenantId, streamName, create) : key,
      );
    }
    return this.#refresh(id, tenantId, streamName, create);
  }

  /** A key read from the store `maxAgeMs` ago or more is read again; a destroyed one never is. */
  #expired(remembered: Remembered): boolean {
    return remembered.found !== 'destroyed' && this.#now() - remembered.startedAt >= this.#maxAgeMs;
  }

  #refresh(id: string, tenantId: string, streamName: string, create: boolean): Promise<DataKey> {
    const remembered: Remembered = {
      loading: this.#load(tenantId, streamName, create),
      startedAt: this.#now(),
    };
    this.#cache.set(id, remembered);
    const current = (): boolean => this.#cache.get(id) === remembered;
    remembered.loading.then(
      (key) => {
        remembered.found = key;
        // "none" is not kept: another process may make the key at any time.
        if (key === 'none' && current()) this.#cache.delete(id);
      },
      () => {
        if (current()) this.#cache.delete(id);
      },
    );
    while (this.#cache.size > this.#capacity) {
      this.#cache.delete(this.#cache.keys().next().value as string);
    }
    return remembered.loading;
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
