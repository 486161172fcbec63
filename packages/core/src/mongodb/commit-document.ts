import type { RecordedEvent } from '../typing/index.js';

/** One commit (an atomic batch of events of one stream) as one MongoDB document. */
export interface CommitDocument {
  /**
   * `<tenant>|<stream>|<fromVersion, 16 digits>` (see `commitKey`): the unique key that makes
   * two writers of the same version collide, and a point lookup for readers walking a stream.
   */
  _id: string;
  t: string;
  s: string;
  c: string;
  /** Versions of the first and last event of the commit. */
  f: number;
  v: number;
  e: Array<{ i: string; y: string; d: string; m: string }>;
  at: string;
  /** 1 while the sequencer has not placed the commit in the global log, then 0. */
  q: 0 | 1;
  /** Global position of the commit's first event, once sequenced. */
  g?: number;
  /**
   * The bucket of the commit's first version (`bucketOf(f)`): a stream read queries one bucket
   * at a time by equality, which FerretDB on PostgreSQL filters in the database (see
   * `MongoEventStore`). Absent on commits written before buckets (a store holding any reads by `_id`).
   */
  k?: number;
}

/** A page of the global log: the sequencer's single atomic write that fences positions. */
export interface LogPageDocument {
  /** `pageKey(start)`: unique, so two sequencers cannot both write the page at a position. */
  _id: string;
  /** Position of the page's first event; the previous page ends at `start - 1`. */
  start: number;
  end: number;
  commits: Array<{ id: string; g: number }>;
  at: string;
}

/**
 * The `_id` of the commit of a stream that starts at `fromVersion`. Tenant ids have no `|` and the
 * version has a fixed width, so the key is unique per (tenant, stream, version). Point lookups by
 * `_id` are the one query every MongoDB-compatible server answers from an index (FerretDB 1.24's
 * SQLite backend pushes down no other filter), so the hot reads walk commits by key.
 */
export const commitKey = (tenantId: string, streamName: string, fromVersion: number): string =>
  `${tenantId}|${streamName}|${String(fromVersion).padStart(16, '0')}`;

/** The tenant, stream and first version a `commitKey` names; undefined for another string. */
export const parseCommitKey = (key: string): { t: string; s: string; f: number } | undefined => {
  const first = key.indexOf('|');
  const last = key.lastIndexOf('|');
  const f = Number(key.slice(last + 1));
  if (first < 1 || last <= first || key.length - last - 1 !== 16 || !Number.isSafeInteger(f))
    return undefined;
  return { t: key.slice(0, first), s: key.slice(first + 1, last), f };
};

/** Versions per bucket of a stream (the `k` of its commits). */
export const BUCKET_VERSIONS = 64;

/** The bucket a version falls in. */
export const bucketOf = (version: number): number => Math.floor(version / BUCKET_VERSIONS);

/** The `_id` of the log page starting at `position` (fixed width, so it sorts like the number). */
export const pageKey = (position: number): string => `p${String(position).padStart(16, '0')}`;

/** Turns a stored commit into recorded events. */
export const toRecordedEvents = (doc: CommitDocument): RecordedEvent[] =>
  doc.e.map((e, k) => ({
    eventId: e.i,
    type: e.y,
    data: JSON.parse(e.d) as unknown,
    metadata: JSON.parse(e.m) as RecordedEvent['metadata'],
    tenantId: doc.t,
    streamName: doc.s,
    version: doc.f + k,
    ...(doc.g === undefined ? {} : { globalPosition: doc.g + k }),
    commitId: doc.c,
    recordedAt: doc.at,
  }));
