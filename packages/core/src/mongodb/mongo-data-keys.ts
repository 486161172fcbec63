import type { Collection, Db } from 'mongodb';
import type { DataKeyStore, StoredDataKey } from '../sealing/index.js';
import { dataKeyId } from '../sealing/index.js';
import { isDuplicateKey } from './mongo-errors.js';

/** One stream's data key in `<prefix>data_keys`: sealed with the master key, or its tombstone. */
interface DataKeyDocument {
  /** `dataKeyId(tenant, stream)`: the primary key makes the first key the only one. */
  _id: string;
  t: string;
  s: string;
  /** The key sealed with the master key (JSON text); absent once destroyed. */
  sealed?: string;
  createdAt?: string;
  destroyedAt?: string;
}

/**
 * Data keys on MongoDB or FerretDB 1.24. Making a key is an insert the `_id` index lets succeed
 * once (a duplicate means another process made it: that one is read back and used); destroying
 * replaces the document by its tombstone (an upsert of the whole document, no condition), so a
 * key made concurrently with its destruction is either replaced or finds the tombstone. On
 * FerretDB a destroy racing the key's first insert can fail with a duplicate key (its upsert is
 * an insert there): the erasure is retried (the relay's next round), and finds the key to replace.
 */
export class MongoDataKeyStore implements DataKeyStore {
  readonly #keys: Collection<DataKeyDocument>;

  constructor(db: Db, options: { collectionPrefix?: string } = {}) {
    this.#keys = db.collection<DataKeyDocument>(`${options.collectionPrefix ?? ''}data_keys`);
  }

  async get(tenantId: string, streamName: string): Promise<StoredDataKey | undefined> {
    const document = await this.#keys.findOne({ _id: dataKeyId(tenantId, streamName) });
    return document ? toStored(document) : undefined;
  }

  async create(tenantId: string, streamName: string, key: StoredDataKey): Promise<StoredDataKey> {
    const _id = dataKeyId(tenantId, streamName);
    const document: DataKeyDocument =
      'sealed' in key
        ? {
            _id,
            t: tenantId,
            s: streamName,
            sealed: JSON.stringify(key.sealed),
            createdAt: new Date().toISOString(),
          }
        : { _id, t: tenantId, s: streamName, destroyedAt: key.destroyedAt };
    try {
      await this.#keys.insertOne(document);
      return key;
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
    const first = await this.#keys.findOne({ _id });
    if (!first) throw new Error(`the data key of ${streamName} exists but could not be read`);
    return toStored(first);
  }

  async destroy(tenantId: string, streamName: string, at: string): Promise<void> {
    const _id = dataKeyId(tenantId, streamName);
    await this.#keys.replaceOne({ _id }, { t: tenantId, s: streamName, destroyedAt: at }, { upsert: true });
  }
}

const toStored = (document: DataKeyDocument): StoredDataKey =>
  document.sealed === undefined
    ? { destroyedAt: document.destroyedAt ?? '' }
    : { sealed: JSON.parse(document.sealed) as Extract<StoredDataKey, { sealed: unknown }>['sealed'] };
