import type { RecordedEvent } from '../typing/index.js';
import type { EventStore } from './event-store.js';

/** Options of one sequencer round. */
export interface SequenceOptions {
  /** Look for other processes' commits now, even if this store would wait a while to (flushes). */
  discover?: boolean;
  /**
   * Place only the commits appended through this instance, never looking for other processes'
   * (a relay that does not hold the lease places its own so the holder can publish them at once).
   */
  ownOnly?: boolean;
  /**
   * Called with each page this round placed, once every read can see it: the relay tells the
   * other processes (the holder publishes it from there, sequencers learn where the log ends).
   */
  onPlaced?: (page: PlacedPage) => void;
}

/**
 * A page of the global log as the sequencer that placed it tells the other processes. Only sent
 * once the page and its position markers are durable, so a receiver may treat it as the log.
 */
export interface PlacedPage {
  /** The identity of the store whose log it is: a receiver ignores another store's pages. */
  log: string;
  /** Positions of its first and last events. */
  start: number;
  end: number;
  /** Its commits (store keys) with the position of each one's first event. */
  commits: Array<{ id: string; g: number }>;
  /** Its events as stored, with their positions; absent when too large to tell. */
  events?: RecordedEvent[];
}

/** Places committed commits in the global log: the outbox relay's need, apart from writers and readers. */
export interface LogSequencer {
  /**
   * Places committed-but-unsequenced commits into the global log. Safe to call from several
   * processes at once; returns how many commits it placed. The in-memory store sequences on append.
   */
  sequence(options?: SequenceOptions): Promise<number>;
  /**
   * Takes in a page another process placed (told over the bus): its events serve the next reads of
   * the global log there, and the sequencer knows where the log ends without a query. Optional.
   */
  learnPlaced?(page: PlacedPage): void;
  /** The global position of an event of a page placed or learned lately here; undefined: not known here. */
  placedPosition?(eventId: string): number | undefined;
}

/** Wakes a reader on this process's appends: the relay's and the live feed's need, so they can sleep. */
export interface AppendWatch {
  /** Resolves after the next append in this process (or after `timeoutMs`). */
  waitForAppend(timeoutMs: number, signal?: AbortSignal, since?: number): Promise<void>;
  /** Appends made through this instance so far; pass it as `since` so no append is missed. */
  readonly appendCount: number;
}

/**
 * Hands each commit made through this instance to listeners the moment it is durable: the outbox
 * relay's fast path publishes it at once (the relay's own, later publish of the same event ids is
 * deduplicated by the bus). Told in commit order per stream, synchronously, before the append
 * resolves to its caller; never for an idempotent replay (that commit was told, or the relay has it).
 */
export interface CommitNotices {
  /** Calls `listener` with the events of every commit of this instance; returns the way to stop. */
  onCommitted(listener: (events: readonly RecordedEvent[]) => void): () => void;
}

/** What a store adapter offers the process that runs it: the log port and the narrow ports. */
export type EventStoreAdapter = EventStore & LogSequencer & AppendWatch & CommitNotices;
