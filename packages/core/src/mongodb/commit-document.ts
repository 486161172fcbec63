import type { RecordedEvent } from '../typing/index.js';

/** One commit (an atomic batch of events of one stream) as one MongoDB document. */
export interface CommitDocument {
  /** `<tenant>:<commitId>`: a retried commit collides with itself, so retries are idempotent. */
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
}

/** A page of the global log: the sequencer's single atomic write that fences positions. */
export interface LogPageDocument {
  /** Position of the page's first event; the previous page ends at `_id - 1`. */
  _id: number;
  end: number;
  commits: Array<{ id: string; g: number }>;
  at: string;
}

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
