import type { RecordedEvent } from '@keel/core';
import { SEALED_FIELD } from '@keel/core';
import { ephemeralVersion } from './feed-frames.js';
import type { FeedSources, FeedTarget } from './feed-reader.js';

/** Where a feed is: the last version it yielded and the seq of its last delta. */
export interface FeedCursor {
  lastVersion: number;
  lastSeq: number;
}

/** Which conversation a feed's input follows (the version it starts after comes later). */
export type FeedStream = Omit<FeedTarget, 'after'>;

/** Deltas a reader holds for a consumer that stopped pulling, unless the sources say otherwise. */
export const DEFAULT_MAX_QUEUED_DELTAS = 1_000;

/** Watched events held ahead of the reader past this many: dropped, and the log is read instead. */
const MAX_WATCHED_AHEAD = 256;

/** Why a notice (a delta, a commit ahead) wakes the reader: a constant (an abort without one builds a DOMException). */
const WOKEN = 'woken';

/**
 * Whether a live notice of `version` calls for a read of the log: only a version after the last
 * one yielded (an older or equal one is in the log and was yielded already).
 */
export const noticeCallsForRead = (version: unknown, lastVersion: number): boolean =>
  typeof version === 'number' && version > lastVersion;

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

/**
 * A feed's live input as it arrives: its deltas, a bounded queue (the oldest dropped past
 * `maxQueuedDeltas`), and with the bus's watch the stream's events after the cursor's version
 * (`watched`, by version, when usable as they are; else `committedAhead`); and a wake-up signal,
 * aborted by each and re-armed on each pass of the reader. Stopping (`stopped`) wakes the reader
 * and ends the subscriptions, whether or not a reader ever took the input.
 */
export class FeedInput {
  readonly cursor: FeedCursor = { lastVersion: 0, lastSeq: 0 };
  readonly queued: unknown[] = [];
  /** Usable events seen on the watch after the cursor's version, by version. */
  readonly watched = new Map<number, RecordedEvent>();
  wake = new AbortController();
  /** A commit after the last version yielded was published, not usable as it is, since the last read. */
  committedAhead = false;
  /** The bus's server answered a round trip sent after the watch (openFeedInput's ping): it is live. */
  watchLive = false;
  readonly #subscription: { unsubscribe(): void };
  readonly #watching: { unsubscribe(): void } | undefined;
  readonly #stopped: AbortSignal;
  readonly #onStop = (): void => this.close();
  #closed = false;

  constructor(sources: FeedSources, stream: FeedStream, stopped: AbortSignal) {
    const { tenantId, conversationId, streamName } = stream;
    this.#stopped = stopped;
    stopped.addEventListener('abort', this.#onStop, { once: true });
    this.#watching = sources.watch?.({ tenantId, streamName }, (event) => {
      if (!noticeCallsForRead(event.version, this.cursor.lastVersion)) return;
      if (usableWatchedEvent(event, stream) && this.watched.size < MAX_WATCHED_AHEAD) {
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
    if (stopped.aborted) this.close();
  }

  /** Starts the cursor after `version` (the feed's `after`), forgetting what was watched up to it. */
  startAfter(version: number): FeedCursor {
    this.cursor.lastVersion = version;
    this.dropWatchedUpTo(version);
    return this.cursor;
  }

  /** A fresh wake signal, aborted at once when the reader is stopped already. */
  rearm(): void {
    this.wake = new AbortController();
    if (this.#stopped.aborted) this.wake.abort(WOKEN);
  }

  /** Takes, one at a time, the watched events that directly follow the cursor (it moves as each is yielded). */
  *takeWatched(): Generator<RecordedEvent, void, undefined> {
    let next: RecordedEvent | undefined;
    while ((next = this.watched.get(this.cursor.lastVersion + 1)) !== undefined) {
      this.watched.delete(next.version);
      yield next;
    }
    this.dropWatchedUpTo(this.cursor.lastVersion);
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

  /** Ends the subscriptions and wakes the reader. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#stopped.removeEventListener('abort', this.#onStop);
    this.#subscription.unsubscribe();
    this.#watching?.unsubscribe();
    this.wake.abort(WOKEN);
  }
}

/**
 * A feed's input opened before the version it follows is known (a turn feed opens it before the
 * message is submitted). Its watch is live once the bus's server answers the round trip sent after
 * it (`watchLive`); that answer is not waited for: the message goes to the agent alongside it, and
 * it is in long before the agent's reply (a commit and its publish). A feed starting before it
 * reads the log first. The one race left, the server handling the agent's publish before this
 * process's earlier watch, costs latency only: the reader finds nothing on the watch and reads the
 * log after its grace period (FIRST_EVENT_GRACE_MS), as for a publish lost.
 */
export const openFeedInput = (sources: FeedSources, stream: FeedStream, stopped: AbortSignal): FeedInput => {
  const input = new FeedInput(sources, stream, stopped);
  if (sources.watch && sources.ping) {
    sources.ping().then(
      () => (input.watchLive = true),
      () => undefined,
    );
  }
  return input;
};
