import type { Collection, Db } from 'mongodb';
import { MongoClient } from 'mongodb';
import { ConcurrencyError, UnavailableError, ValidationError } from '../errors/index.js';
import type {
  AppendOptions,
  AppendResult,
  EventStoreAdapter,
  ExpectedVersion,
  PlacedPage,
  ReadAllOptions,
  ReadAllPage,
  ReadStreamOptions,
  SequenceOptions,
  SnapshotStore,
} from '../event-store/index.js';
import type { PreparedEvent } from '../event-store/append-guard.js';
import { AppendSignal, prepareAppend, versionMismatch } from '../event-store/index.js';
import type { EventData, RecordedEvent } from '../typing/index.js';
import { uuidv7 } from '../typing/index.js';
import type { CommitDocument, LogPageDocument } from './commit-document.js';
import { bucketOf, commitKey, toRecordedEvents } from './commit-document.js';
import { ensureIndexes } from './ensure-indexes.js';
import { isDuplicateKey } from './mongo-errors.js';
import type { SequencerOptions } from './mongo-sequencer.js';
import { MongoSequencer } from './mongo-sequencer.js';
import { MongoSnapshotStore } from './mongo-snapshot-store.js';
import { storeIdentity } from './store-identity.js';
import { StreamBoundaries } from './stream-boundaries.js';

/** Collection names of the event log; a prefix lets several logs share one database. */
export interface MongoEventStoreOptions {
  collectionPrefix?: string;
  /**
   * How a stream is read after a known commit boundary: `walk` follows the commits by `_id` (point
   * lookups: the only indexed query FerretDB serves on SQLite), `buckets` queries a bucket of
   * versions at a time by equality (one scan per bucket instead of one per commit: FerretDB on
   * PostgreSQL), `range` makes one indexed range query (best on MongoDB). Default: by server and
   * backend, found at `init()`.
   */
  reads?: 'walk' | 'buckets' | 'range';
  /** Settings of the sequencer that places commits in the global log. */
  sequencer?: SequencerOptions;
}

const MAX_ANY_RETRIES = 100;
/** Connections per process unless the URL says otherwise (see `connect`). */
const MAX_POOL = 20;
/** Point lookups a read makes along a stream's commit chain before it switches to a range query. */
const CHAIN_LIMIT = 16;
/** Position markers per update command on FerretDB (see MongoSequencer.limitMarksPerCommand). */
const FERRETDB_MARKS_PER_COMMAND = 4;

/** The document of a new commit of `prepared` from version `from`, not yet sequenced (`q: 1`). */
const commitDocumentOf = (
  commit: { tenantId: string; streamName: string; commitId: string; from: number; at: string },
  prepared: readonly PreparedEvent[],
): CommitDocument => ({
  _id: commitKey(commit.tenantId, commit.streamName, commit.from),
  t: commit.tenantId,
  s: commit.streamName,
  c: commit.commitId,
  f: commit.from,
  v: commit.from + prepared.length - 1,
  e: prepared.map((p) => ({ i: p.eventId, y: p.type, d: p.dataJson, m: p.metadataJson })),
  at: commit.at,
  q: 1,
  k: bucketOf(commit.from),
});

/**
 * The event log on MongoDB (and FerretDB): one document per commit, a unique index on
 * (tenant, stream, fromVersion) for optimistic concurrency, payloads as JSON text. Uses nothing
 * beyond what FerretDB 1.24 serves: no transactions, no change streams.
 */
export class MongoEventStore implements EventStoreAdapter {
  readonly snapshots: SnapshotStore;
  private readonly commits: Collection<CommitDocument>;
  private readonly pages: Collection<LogPageDocument>;
  private readonly sequencer: MongoSequencer;
  private readonly boundaries = new StreamBoundaries();
  private readonly appended = new AppendSignal();
  private ownedClient: MongoClient | undefined;
  /** Which server answers: indexes that only serve queries are skipped on FerretDB. */
  serverKind: 'mongodb' | 'ferretdb' = 'mongodb';
  private chainLimit = CHAIN_LIMIT;
  private readonly reads: MongoEventStoreOptions['reads'];
  private bucketReads = false;
  /** How this store reads a stream, as `init` chose (or the options said). */
  streamReads: NonNullable<MongoEventStoreOptions['reads']> = 'walk';

  constructor(
    readonly db: Db,
    options: MongoEventStoreOptions = {},
  ) {
    const prefix = options.collectionPrefix ?? '';
    this.reads = options.reads;
    if (options.reads) this.chainLimit = options.reads === 'range' ? 0 : CHAIN_LIMIT;
    this.bucketReads = options.reads === 'buckets';
    this.commits = db.collection<CommitDocument>(`${prefix}commits`);
    this.pages = db.collection<LogPageDocument>(`${prefix}log_pages`);
    this.snapshots = new MongoSnapshotStore(db.collection(`${prefix}snapshots`), {
      isBoundary: (t, s, v) => this.boundaries.has(t, s, v),
      boundaryLoaded: (t, s, v) => this.boundaries.add(t, s, v),
    });
    this.sequencer = new MongoSequencer(this.commits, this.pages, options.sequencer);
  }

  /** Connects to `url` (database from the URL path, or `dbName`), creates indexes, and owns the client. */
  static async connect(
    url: string,
    options: MongoEventStoreOptions & { dbName?: string } = {},
  ): Promise<MongoEventStore> {
    // FerretDB 1.24 (SQLite) stops answering when about a hundred queries are open at once (its
    // connection pool deadlocks); a few dozen per process keep several processes well below that,
    // the rest wait in the driver. `maxPoolSize` in the URL overrides it.
    const pool = /[?&]maxPoolSize=/i.test(url) ? {} : { maxPoolSize: MAX_POOL };
    const client = new MongoClient(url, { serverSelectionTimeoutMS: 5_000, ...pool });
    try {
      await client.connect();
    } catch (error) {
      throw new UnavailableError('cannot reach MongoDB', { cause: error });
    }
    const store = new MongoEventStore(client.db(options.dbName), options);
    store.ownedClient = client;
    await store.init();
    return store;
  }

  /**
   * Creates the indexes; idempotent. The unique ones carry invariants; the others serve queries.
   * FerretDB 1.24 (SQLite) answers every query but an exact `_id` lookup with a scan, so there the
   * query indexes would only slow writes down and are not created. On PostgreSQL it filters even
   * `_id` with jsonb containment (`@>`), which its btree indexes cannot serve, so a lookup scans too;
   * but it pushes no `$gte` down, so a range query ships every commit of the stream to FerretDB to
   * filter (1.7 s for a 10,000-commit stream, against ~110 ms for a 6-commit walk). It does push
   * equality on any field down, so there a stream is read a bucket of versions per query (`k`):
   * one scan where the walk made one per commit.
   */
  async init(): Promise<void> {
    const info = await this.db.command({ buildInfo: 1 }).catch(() => ({}));
    this.serverKind = 'ferretdbVersion' in info ? 'ferretdb' : 'mongodb';
    await ensureIndexes(this.commits, [{ key: { t: 1, c: 1 }, name: 'commit_id', unique: true }]);
    let reads =
      this.reads ??
      (this.serverKind === 'mongodb' ? 'range' : (await this.onPostgreSql()) ? 'buckets' : 'walk');
    if (reads === 'buckets' && (await this.hasCommitsWithoutBucket())) reads = 'walk';
    this.chainLimit = reads === 'range' ? 0 : CHAIN_LIMIT;
    this.bucketReads = reads === 'buckets';
    this.streamReads = reads;
    // FerretDB answers the query for unplaced commits with a scan, which under load takes seconds:
    // every 2 s at most. Each process places its own commits (its relay wakes the publishing one),
    // so the query only finds those of a process that died before placing them.
    // Pages are told to the other processes under the store's identity (see MongoSequencer.learn).
    this.sequencer.identify(await storeIdentity(this.db));
    if (this.serverKind === 'ferretdb') {
      this.sequencer.setDiscoveryDefaults({ intervalMs: 2000, idleMs: 2000 });
      this.sequencer.limitMarksPerCommand(FERRETDB_MARKS_PER_COMMAND);
    }
    // On PostgreSQL FerretDB's own btree indexes serve no query, but their GIN twins do where the
    // database has deploy/ferretdb/postgresql-gin-twins.sql: the bucket reads and the relay's query
    // for unplaced commits then use indexes. Without the twins these cost a little per write only.
    if (this.bucketReads) {
      await ensureIndexes(this.commits, [
        { key: { k: 1, s: 1 }, name: 'stream_bucket' },
        { key: { q: 1 }, name: 'unplaced' },
      ]);
    }
    if (this.serverKind === 'ferretdb') return;
    await ensureIndexes(this.commits, [
      { key: { t: 1, s: 1, v: 1 }, name: 'stream_to_version' },
      { key: { q: 1, at: 1 }, name: 'unsequenced' },
      { key: { g: 1 }, name: 'global_position' },
    ]);
    await (this.snapshots as MongoSnapshotStore).init();
  }

  async append(
    tenantId: string,
    streamName: string,
    events: EventData[],
    options: AppendOptions = {},
  ): Promise<AppendResult> {
    const expected = options.expectedVersion ?? 'any';
    const prepared = prepareAppend(tenantId, streamName, events, expected);
    const commitId = options.commitId ?? uuidv7();
    const at = new Date().toISOString();

    for (let attempt = 0; attempt < MAX_ANY_RETRIES; attempt++) {
      const head = await this.headFor(tenantId, streamName, expected, attempt > 0);
      if (head !== undefined && versionMismatch(expected, head)) {
        const replay = await this.replay(commitId, tenantId, streamName);
        if (replay) return replay;
        throw new ConcurrencyError(streamName, expected, head);
      }
      const from = (head ?? (expected as number)) + 1;
      const doc = commitDocumentOf({ tenantId, streamName, commitId, from, at }, prepared);
      try {
        await this.commits.insertOne(doc);
      } catch (error) {
        if (!isDuplicateKey(error)) throw new UnavailableError('append failed', { cause: error });
        const replay = await this.replay(commitId, tenantId, streamName);
        if (replay) return replay;
        if (expected === 'any' || expected === 'exists') continue;
        throw new ConcurrencyError(streamName, expected, await this.streamVersion(tenantId, streamName));
      }
      this.boundaries.add(tenantId, streamName, doc.v);
      this.sequencer.hint(doc);
      // Told before the caller hears of the commit: a fast publish of it goes out ahead of any
      // later commit of the same stream by this process (same connection, same order).
      this.appended.notify(toRecordedEvents(doc));
      return {
        commitId,
        fromVersion: doc.f,
        nextExpectedVersion: doc.v,
        events: toRecordedEvents(doc),
        idempotentReplay: false,
      };
    }
    throw new ConcurrencyError(streamName, expected, undefined);
  }

  async read(
    tenantId: string,
    streamName: string,
    options: ReadStreamOptions = {},
  ): Promise<RecordedEvent[]> {
    const from = options.fromVersion ?? 1;
    const to = options.toVersion ?? Number.MAX_SAFE_INTEGER;
    const docs = await this.commitsFrom(tenantId, streamName, { from, to, hint: options.fromCommit });
    const events: RecordedEvent[] = [];
    for (const doc of docs) {
      for (const e of toRecordedEvents(doc)) if (e.version >= from && e.version <= to) events.push(e);
    }
    return events;
  }

  async streamVersion(tenantId: string, streamName: string): Promise<number> {
    const known = this.boundaries.head(tenantId, streamName) ?? 0;
    const chain = await this.walk(tenantId, streamName, known + 1, Number.MAX_SAFE_INTEGER);
    if (chain.complete) return chain.docs.at(-1)?.v ?? known;
    const last = await this.commits
      .find({ t: tenantId, s: streamName }, { projection: { v: 1 } })
      .sort({ v: -1 })
      .limit(1)
      .next();
    if (last) this.boundaries.add(tenantId, streamName, last.v);
    return last?.v ?? 0;
  }

  /**
   * The commits holding versions from..to. When `from - 1` is a known commit boundary (0 always
   * is; snapshots are taken at boundaries), the stream is walked commit by commit by `_id`, which
   * also proves where it ends; a long walk, or an unknown start, falls back to a range query. A
   * hint (the commit of an event the reader holds, see ReadStreamOptions.fromCommit) makes an
   * unknown start known: that commit is found by its id, and the few commits after it by `_id`.
   */
  private async commitsFrom(
    tenantId: string,
    streamName: string,
    { from, to, hint }: { from: number; to: number; hint: string | undefined },
  ): Promise<CommitDocument[]> {
    const docs: CommitDocument[] = [];
    let next = from;
    let tail = false;
    // On MongoDB (range reads: chainLimit 0) the range query is served by an index already.
    if (hint !== undefined && this.chainLimit > 0 && !this.boundaries.has(tenantId, streamName, from - 1)) {
      const held = await this.commitHolding(tenantId, streamName, hint, from);
      if (held) {
        if (held.v >= from) docs.push(held);
        next = held.v + 1;
        tail = true;
      }
    }
    if (this.boundaries.has(tenantId, streamName, next - 1)) {
      const chain = tail
        ? await this.walkIds(tenantId, streamName, next, to)
        : await this.walk(tenantId, streamName, next, to);
      docs.push(...chain.docs);
      if (chain.complete) return docs;
      next = (docs.at(-1)?.v ?? next - 1) + 1;
    }
    const rest = await this.commits
      .find({ t: tenantId, s: streamName, v: { $gte: next }, f: { $lte: to } })
      .sort({ f: 1 })
      .toArray();
    for (const doc of rest) this.boundaries.add(tenantId, streamName, doc.v);
    return docs.concat(rest);
  }

  /**
   * The commit `commitId` when it is one of this stream's holding `from - 1` or `from` (its bounds
   * then known); else undefined. By the id alone, the tenant and stream checked here: see
   * walkBuckets on why no tenant in a filter.
   */
  private async commitHolding(
    tenantId: string,
    streamName: string,
    commitId: string,
    from: number,
  ): Promise<CommitDocument | undefined> {
    const found = await this.commits.find({ c: commitId }).toArray();
    const held = found.find((doc) => doc.t === tenantId && doc.s === streamName);
    if (!held || held.f > from || held.v < from - 1) return undefined;
    this.boundaries.add(tenantId, streamName, held.f - 1);
    this.boundaries.add(tenantId, streamName, held.v);
    return held;
  }

  /** Follows the commit chain from a version known to start a commit (or to be past the head). */
  private async walk(
    tenantId: string,
    streamName: string,
    from: number,
    to: number,
  ): Promise<{ docs: CommitDocument[]; complete: boolean }> {
    if (this.bucketReads) return this.walkBuckets(tenantId, streamName, from, to);
    return this.walkIds(tenantId, streamName, from, to);
  }

  /**
   * The chain by `_id`, one commit per lookup: a lookup reads one document, where a bucket query
   * makes FerretDB decode every commit of the bucket, so the tail after a held event goes so.
   */
  private async walkIds(
    tenantId: string,
    streamName: string,
    from: number,
    to: number,
  ): Promise<{ docs: CommitDocument[]; complete: boolean }> {
    const docs: CommitDocument[] = [];
    let next = from;
    for (let i = 0; i < this.chainLimit; i++) {
      if (next > to) return { docs, complete: true };
      const doc = await this.commits.findOne({ _id: commitKey(tenantId, streamName, next) });
      if (!doc) return { docs, complete: true };
      this.boundaries.add(tenantId, streamName, doc.v);
      docs.push(doc);
      next = doc.v + 1;
    }
    return { docs, complete: false };
  }

  /**
   * Follows the chain a bucket at a time from a version known to start a commit: the commits of
   * the bucket from there on, by equality on (t, s, k). Every commit carries its bucket, so a
   * chain that ends inside the bucket ends the stream. A gap, or a head this process saw beyond
   * the end (a commit written without `k` by an older writer), leaves it incomplete: the caller
   * reads the rest by range.
   */
  private async walkBuckets(
    tenantId: string,
    streamName: string,
    from: number,
    to: number,
  ): Promise<{ docs: CommitDocument[]; complete: boolean }> {
    const docs: CommitDocument[] = [];
    let next = from;
    for (let i = 0; i < this.chainLimit; i++) {
      if (next > to) return { docs, complete: true };
      const bucket = bucketOf(next);
      const found = await this.commits
        // By (k, s) only, the tenant checked here: with `t` in the filter, a PostgreSQL that has
        // not analyzed the table yet ANDs the tenant's index (every commit of the tenant) to the
        // (k, s) twin's (deploy/ferretdb/postgresql-gin-twins.sql).
        .find({ k: bucket, s: streamName, f: { $gte: next } })
        .toArray();
      const own = found.filter((doc) => doc.t === tenantId);
      for (const doc of own.sort((a, b) => a.f - b.f)) {
        if (doc.f !== next) return { docs, complete: false };
        this.boundaries.add(tenantId, streamName, doc.v);
        docs.push(doc);
        next = doc.v + 1;
      }
      if (bucketOf(next) === bucket) {
        return { docs, complete: (this.boundaries.head(tenantId, streamName) ?? 0) < next };
      }
    }
    return { docs, complete: false };
  }

  /** True when FerretDB stores in PostgreSQL (its query plans are PostgreSQL's). */
  private async onPostgreSql(): Promise<boolean> {
    const plan = await this.commits
      .find({ _id: '' })
      .explain()
      .catch(() => ({}));
    return JSON.stringify(plan).includes('"Node Type"');
  }

  /**
   * True when some commit has no bucket (written before buckets): such a log keeps the `_id`
   * walk. One scan at start; filling the buckets in place with a burst of updates stalls FerretDB.
   */
  private async hasCommitsWithoutBucket(): Promise<boolean> {
    return (await this.commits.findOne({ k: { $exists: false } }, { projection: { _id: 1 } })) !== null;
  }

  async readAll(options: ReadAllOptions): Promise<ReadAllPage> {
    const after = options.after ?? 0;
    const limit = options.limit ?? 1000;
    if (!Number.isSafeInteger(after) || after < 0)
      throw new ValidationError('invalid position', { field: 'after' });
    if (!Number.isSafeInteger(limit) || limit < 1)
      throw new ValidationError('invalid limit', { field: 'limit' });
    if (options.scope === 'all-tenants') {
      const recent = this.sequencer.recentEvents(after, limit);
      if (recent) return recent;
      const paged = await this.sequencer.pageEvents(after, limit);
      if (paged) return paged;
    }
    const filter = options.scope === 'all-tenants' ? {} : { t: options.scope.tenantId };
    // A commit's first event may be at or before `after` only if the page started mid-commit:
    // pages end on commit boundaries, so `g > after` finds exactly the commits not yet read.
    const docs = await this.commits
      .find({ ...filter, g: { $gt: after } })
      .sort({ g: 1 })
      .limit(limit)
      .toArray();
    const events: RecordedEvent[] = [];
    let lastPosition = after;
    for (const doc of docs) {
      if (events.length >= limit) break;
      events.push(...toRecordedEvents(doc));
      lastPosition = doc.g! + doc.v - doc.f;
    }
    return { events, lastPosition };
  }

  sequence(options: SequenceOptions = {}): Promise<number> {
    return this.sequencer.run(options.discover ?? false, options.ownOnly ?? false, options.onPlaced);
  }

  learnPlaced(page: PlacedPage): void {
    this.sequencer.learn(page);
  }

  placedPosition(eventId: string): number | undefined {
    return this.sequencer.positionOf(eventId);
  }

  waitForAppend(timeoutMs: number, signal?: AbortSignal, since?: number): Promise<void> {
    return this.appended.wait(timeoutMs, signal, since);
  }

  get appendCount(): number {
    return this.appended.count;
  }

  onCommitted(listener: (events: readonly RecordedEvent[]) => void): () => void {
    return this.appended.onCommitted(listener);
  }

  async close(): Promise<void> {
    this.appended.release();
    await this.ownedClient?.close();
  }

  /** The head to append after: a known boundary when the expectation allows it, else read. */
  private async headFor(
    tenantId: string,
    streamName: string,
    expected: ExpectedVersion,
    reread: boolean,
  ): Promise<number | undefined> {
    if (expected === 'no_stream') return 0;
    if (typeof expected === 'number') {
      return this.boundaries.has(tenantId, streamName, expected)
        ? expected
        : this.streamVersion(tenantId, streamName);
    }
    const known = reread ? undefined : this.boundaries.head(tenantId, streamName);
    return known ?? this.streamVersion(tenantId, streamName);
  }

  /** The result of an earlier commit with this id, when this append is a retry of it. */
  private async replay(
    commitId: string,
    tenantId: string,
    streamName: string,
  ): Promise<AppendResult | undefined> {
    const doc = await this.commits.findOne({ t: tenantId, c: commitId });
    if (!doc) return undefined;
    if (doc.s !== streamName || doc.t !== tenantId) {
      throw new ValidationError(`commit id ${doc.c} was used for another stream`, { field: 'commitId' });
    }
    return {
      commitId: doc.c,
      fromVersion: doc.f,
      nextExpectedVersion: doc.v,
      events: toRecordedEvents(doc),
      idempotentReplay: true,
    };
  }
}
