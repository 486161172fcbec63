import type { AppendWatch, EphemeralChannel, EventBus, EventStore, RecordedEvent } from '@keel/core';
import { SEALED_FIELD } from '@keel/core';
import type { FeedFrame } from './feed-frames.js';
import { durableFrame, ephemeralFrame, ephemeralVersion } from './feed-frames.js';

/** Where a feed reads: the event log and the bus's ephemeral channel. */
export interface FeedSources {
  store: Pick<EventStore, 'read'> & AppendWatch;
  ephemeral: EphemeralChannel;
  /** Longest wait between two reads of the log when nothing woke the reader earlier. */
  pollMs: number;
  /**
   * The same with `watch` (every commit wakes the reader): only a lost notice waits for it, so it
   * can be long; each read is a store query, and hundreds of open feeds polling every `pollMs`
   * keep the store busy for nothing. Absent: `pollMs`.
   */
  watchedPollMs?: number;
  /** Deltas waiting for a consumer that does not pull beyond this many: the oldest are dropped. */
  maxQueuedDeltas?: number;
  /**
   * The bus's live view of the stream's published events (any process's commits, published as
   * soon as they are durable, opened when this process holds the stream's key): the event that
   * directly follows the last one yielded is yielded as it is; any other version not yielded yet
   * (a gap, content still sealed) wakes the reader to read the log.
   */
  watch?: EventBus['watch'];
}

/**
 * Whether a live notice of `version` calls for a read of the log: only a version after the last
 * one yielded (an older or equal one is in the log and was yielded already).
 */
export const noticeCallsForRead = (version: unknown, lastVersion: number): boolean =>
  typeof version === 'number' && version > lastVersion;

/** Which conversation a feed reads, and from where. */
export interface FeedTarget {
  tenantId: string;
  conversationId: string;
  streamName: string;
  /** Last version the client has: the feed yields what follows. */
  after: number;
}

/**
 * Whether an event seen on the bus's watch may be yielded as the log would return it: the feed's
 * own tenant and stream (the watch is per tenant and stream; checked again), a version, and
 * content opened (an event whose key this process does not hold yet comes sealed).
 */
export const usableWatchedEvent = (
  event: RecordedEvent,
  { tenantId, streamName }: Pick<FeedTarget, 'tenantId' | 'streamName'>,
): boolean =>
  event.tenantId === tenantId &&
  event.streamName === streamName &&
  Number.isSafeInteger(event.version) &&
  !(typeof event.data === 'object' && event.data !== null && Object.hasOwn(event.data, SEALED_FIELD));

/** Deltas a reader holds for a consumer that stopped pulling, unless the sources say otherwise. */
export const DEFAULT_MAX_QUEUED_DELTAS = 1_000;

/** Watched events held ahead of the reader past this many: dropped, and the log is read instead. */
const MAX_WATCHED_AHEAD = 256;

/**
 * The frames of a conversation's feed: its durable events from the log after `target.after`, then
 * live ones, merged with its ephemeral deltas; until `signal` aborts (or the consumer stops).
 *
 * No gap, no duplicate: the reader remembers the last version it yielded and yields only the
 * version right after it, so a version is yielded at most once and none is skipped (per-stream
 * versions are dense). That event comes from the log (read strictly after the last version, one
 * read at a time) or from the bus's watch: an event published is committed (nothing is published
 * before its commit is durable), and version `last + 1` of the stream is the one event the log
 * holds there, so the watched copy (opened and upcast as a read returns it) is yielded without a
 * read. A watched version further ahead (a gap: a publish missed, or two writers' commits reaching
 * the bus out of order) or still sealed makes the reader read the log instead. Latency: a read
 * runs at once then, when a delta or context message arrives that follows a version not yielded
 * yet, when this process appends (the dev mode's in-process agent), and otherwise every `pollMs`
 * (the safety net for a notice lost; `watchedPollMs` with a watch).
 *
 * The delta subscription is opened before the first read, and a delta never precedes the durable
 * events it follows: a delta that names the log version it follows (`version`, set by the agent)
 * goes out at once when that version was yielded already (no read of the log per token); one that
 * is ahead of the reader, or names no version, waits in a queue until a read of the log is yielded.
 * Deltas never starve the log: it is read at least every `pollMs` while they flow. The queue is
 * bounded (a consumer that stops pulling loses the oldest deltas, never durable events). Stopping
 * the reader never touches the turn.
 */
export async function* readFeed(
  sources: FeedSources,
  target: FeedTarget,
  signal: AbortSignal,
): AsyncGenerator<FeedFrame, void, undefined> {
  const { store } = sources;
  const pollMs = sources.watch ? (sources.watchedPollMs ?? sources.pollMs) : sources.pollMs;
  const { tenantId, streamName } = target;
  if (signal.aborted) return;
  const cursor: FeedCursor = { lastVersion: target.after, lastSeq: 0 };
  // Subscribed before the first read: nothing published from here on is missed.
  const deltas = new DeltaQueue(sources, target, cursor, signal);
  // The first pass reads; later ones read only when something may be in the log that was not yielded.
  let mustRead = true;
  let since = 0;
  let readAt = 0;
  try {
    while (!signal.aborted) {
      deltas.rearm();
      if (!mustRead) {
        // Watched events that follow the cursor, then the deltas following only versions yielded.
        for (const frame of livePassFrames(deltas, cursor)) {
          yield frame;
          if (signal.aborted) return;
        }
        mustRead =
          deltas.queued.length > 0 ||
          deltas.committedAhead ||
          deltas.watched.size > 0 ||
          Date.now() - readAt >= pollMs;
      }
      if (mustRead) {
        deltas.committedAhead = false;
        since = store.appendCount;
        readAt = Date.now();
        const events = await store.read(tenantId, streamName, { fromVersion: cursor.lastVersion + 1 });
        for (const frame of readPassFrames(events, deltas, cursor)) {
          yield frame;
          if (signal.aborted) return;
        }
        deltas.dropWatchedUpTo(cursor.lastVersion);
      }
      mustRead = false;
      if (deltas.queued.length > 0) continue;
      // The wake signal also aborts when `signal` does (no AbortSignal.any per wait).
      await store.waitForAppend(untilPoll(readAt + pollMs - Date.now(), pollMs), deltas.wake.signal, since);
      mustRead = logMayHaveMore(deltas, store.appendCount !== since, Date.now() - readAt >= pollMs);
    }
  } finally {
    deltas.close();
  }
}

/**
 * The wait until the next poll, rounded up to a tenth of the interval (at most 100 ms): Node keeps
 * one timer list per distinct duration in a priority queue, and hundreds of feeds each waiting a
 * different number of ms made inserting into it a hot spot of the gateway under load.
 */
export const untilPoll = (remainingMs: number, pollMs: number): number => {
  const step = Math.max(1, Math.min(100, Math.floor(pollMs / 10)));
  return Math.ceil(Math.max(0, remainingMs) / step) * step;
};

/** Why a notice (a delta, a commit ahead) wakes the reader: a constant (an abort without one builds a DOMException). */
const WOKEN = 'woken';

/**
 * After a wait: whether the log must be read. Only deltas woke the reader when the wake signal
 * fired; then it depends on what they follow (a commit ahead of the reader, an append, the poll).
 */
const logMayHaveMore = (deltas: DeltaQueue, appended: boolean, pollDue: boolean): boolean =>
  !deltas.wake.signal.aborted || deltas.committedAhead || appended || pollDue;

/**
 * A pass without a read: the watched events that follow the cursor one by one, then the deltas
 * that follow only versions yielded. Lazy and synchronous, like a read pass.
 */
function* livePassFrames(deltas: DeltaQueue, cursor: FeedCursor): Generator<FeedFrame, void, undefined> {
  yield* durableFrames(deltas.takeWatched(cursor), cursor);
  yield* deltaFrames(deltas.takeFollowing(cursor.lastVersion), cursor);
}

/**
 * One read pass's frames: the log's events, then the deltas queued while they were read. Lazy and
 * synchronous, so the queue is taken only once the durable frames have gone out.
 */
function* readPassFrames(
  events: Parameters<typeof durableFrames>[0],
  deltas: DeltaQueue,
  cursor: FeedCursor,
): Generator<FeedFrame, void, undefined> {
  yield* durableFrames(events, cursor);
  yield* deltaFrames(deltas.queued.splice(0), cursor);
}

/** Where a feed is: the last version it yielded and the seq of its last delta. */
interface FeedCursor {
  lastVersion: number;
  lastSeq: number;
}

/**
 * A feed's live input as it arrives: its deltas, a bounded queue (the oldest dropped past
 * `maxQueuedDeltas`), and with the bus's watch the stream's events after the cursor's version
 * (`watched`, by version, when usable as they are; else `committedAhead`); and a wake-up signal,
 * aborted by each and re-armed on each pass of the reader.
 */
class DeltaQueue {
  readonly queued: unknown[] = [];
  /** Usable events seen on the watch after the cursor's version, by version. */
  readonly watched = new Map<number, RecordedEvent>();
  wake = new AbortController();
  /** A commit after the last version yielded was published, not usable as it is, since the last read. */
  committedAhead = false;
  readonly #subscription: { unsubscribe(): void };
  readonly #watching: { unsubscribe(): void } | undefined;
  readonly #stopped: AbortSignal;
  readonly #onStop = (): void => this.wake.abort(WOKEN);

  constructor(sources: FeedSources, target: FeedTarget, cursor: FeedCursor, stopped: AbortSignal) {
    const { tenantId, conversationId, streamName } = target;
    this.#stopped = stopped;
    stopped.addEventListener('abort', this.#onStop, { once: true });
    this.#watching = sources.watch?.({ tenantId, streamName }, (event) => {
      if (!noticeCallsForRead(event.version, cursor.lastVersion)) return;
      if (usableWatchedEvent(event, target) && this.watched.size < MAX_WATCHED_AHEAD) {
        this.watched.set(event.version, event);
      } else this.committedAhead = true;
      this.wake.abort(WOKEN);
    });
    const maxQueued = sources.maxQueuedDeltas ?? DEFAULT_MAX_QUEUED_DELTAS;
    this.#subscription = sources.ephemeral.subscribe(
      { kind: 'deltas', tenantId, conversationId },
      (message) => {
        if (this.queued.length >= maxQueued) this.queued.shift();
        this.queued.push(message.data);
        this.wake.abort(WOKEN);
      },
    );
  }

  /** A fresh wake signal, aborted at once when the reader is stopped already. */
  rearm(): void {
    this.wake = new AbortController();
    if (this.#stopped.aborted) this.wake.abort(WOKEN);
  }

  /** Takes, one at a time, the watched events that directly follow the cursor (it moves as each is yielded). */
  *takeWatched(cursor: FeedCursor): Generator<RecordedEvent, void, undefined> {
    let next: RecordedEvent | undefined;
    while ((next = this.watched.get(cursor.lastVersion + 1)) !== undefined) {
      this.watched.delete(next.version);
      yield next;
    }
    this.dropWatchedUpTo(cursor.lastVersion);
  }

  /** Forgets the watched events the reader has yielded (from the log or the watch). */
  dropWatchedUpTo(version: number): void {
    for (const held of this.watched.keys()) if (held <= version) this.watched.delete(held);
  }

  /** Takes, one at a time, the deltas at the head that follow no version after `lastVersion`. */
  *takeFollowing(lastVersion: number): Generator<unknown, void, undefined> {
    while (this.queued.length > 0 && (ephemeralVersion(this.queued[0]) ?? Infinity) <= lastVersion) {
      yield this.queued.shift();
    }
  }

  close(): void {
    this.#stopped.removeEventListener('abort', this.#onStop);
    this.#subscription.unsubscribe();
    this.#watching?.unsubscribe();
  }
}

/**
 * The frames of deltas, ids after the cursor's version, the cursor's seq moved as each is taken.
 * Lazy (the reader yields each before the next is mapped), and synchronous: nothing runs between
 * a frame and the reader's next step.
 */
function* deltaFrames(
  messages: Iterable<unknown>,
  cursor: FeedCursor,
): Generator<FeedFrame, void, undefined> {
  for (const message of messages) {
    const mapped = ephemeralFrame(message, cursor.lastVersion, cursor.lastSeq);
    if (!mapped) continue;
    cursor.lastSeq = mapped.seq;
    yield mapped.frame;
  }
}

/** The frames of events read after the cursor's version, the cursor moved past each event as it is taken. */
function* durableFrames(
  events: Iterable<RecordedEvent>,
  cursor: FeedCursor,
): Generator<FeedFrame, void, undefined> {
  for (const event of events) {
    // Read strictly after lastVersion, so this only guards against a store answering out of range.
    if (event.version <= cursor.lastVersion) continue;
    cursor.lastVersion = event.version;
    const frame = durableFrame(event);
    if (frame) yield frame;
  }
}

/** Whether a frame is ephemeral (`message.delta`, `context`: id `<version>.<seq>`), so it may be dropped. */
export const isEphemeralFrame = (frame: FeedFrame): boolean => frame.id.includes('.');
