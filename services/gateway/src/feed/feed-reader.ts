import type { AppendWatch, EphemeralChannel, EventBus, EventStore, RecordedEvent } from '@keel/core';
import type { FeedFrame } from './feed-frames.js';
import { durableFrame, ephemeralFrame } from './feed-frames.js';
import type { FeedCursor } from './feed-input.js';
import { FeedInput } from './feed-input.js';

export {
  DEFAULT_MAX_QUEUED_DELTAS,
  noticeCallsForRead,
  openFeedInput,
  usableWatchedEvent,
} from './feed-input.js';

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
  /** A round trip to the bus's server: after it, a watch subscribed before it is live. */
  ping?: () => Promise<void>;
}

/** Which conversation a feed reads, and from where. */
export interface FeedTarget {
  tenantId: string;
  conversationId: string;
  streamName: string;
  /** Last version the client has: the feed yields what follows. */
  after: number;
}

/** A feed input opened ahead (openFeedInput), and whether what the feed follows came after it was live. */
export interface OpenedInput {
  input: FeedInput;
  /**
   * Every version after the target's `after` was committed after `input` was live (a turn just
   * submitted, `after` being the version before its message): the first pass need not read. The
   * input must have been opened with the signal the feed is read under.
   */
  committedAfterLive: boolean;
}

/** How soon a feed whose input was live before its first event reads the log if no event came. */
const FIRST_EVENT_GRACE_MS = 100;

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
  opened?: OpenedInput,
): AsyncGenerator<FeedFrame, void, undefined> {
  const { store } = sources;
  const pollMs = sources.watch ? (sources.watchedPollMs ?? sources.pollMs) : sources.pollMs;
  if (signal.aborted) return opened?.input.close();
  // Subscribed before the first read: nothing published from here on is missed.
  const deltas = opened?.input ?? new FeedInput(sources, target, signal);
  const cursor = deltas.startAfter(target.after);
  // The first pass reads, unless everything after `after` was committed once the watch was live:
  // then it comes from the watch, and the log is read only if nothing came within a grace period.
  const awaitingFirst = opened?.committedAfterLive === true && deltas.watchLive;
  const pass: PassState = {
    awaitingFirst,
    mustRead: !awaitingFirst,
    since: store.appendCount,
    readAt: awaitingFirst ? Date.now() - pollMs + FIRST_EVENT_GRACE_MS : 0,
  };
  try {
    while (!signal.aborted) {
      deltas.rearm();
      if (!pass.mustRead) {
        yield* livePass(deltas, cursor, target, pass, pollMs, signal);
        if (signal.aborted) return;
      }
      if (pass.mustRead) {
        yield* readPass(store, target, deltas, cursor, pass, signal);
        if (signal.aborted) return;
      }
      pass.mustRead = false;
      if (deltas.queued.length > 0) continue;
      // The wake signal also aborts when `signal` does (no AbortSignal.any per wait).
      const { since, readAt } = pass;
      await store.waitForAppend(untilPoll(readAt + pollMs - Date.now(), pollMs), deltas.wake.signal, since);
      pass.mustRead = logMayHaveMore(deltas, store.appendCount !== since, Date.now() - readAt >= pollMs);
    }
  } finally {
    deltas.close();
  }
}

/** Where a feed's loop stands between passes. */
interface PassState {
  /** Waiting for the first events of a turn submitted once the watch was live (no read yet). */
  awaitingFirst: boolean;
  mustRead: boolean;
  /** The store's append count when the log was last read, and when. */
  since: number;
  readAt: number;
}

/** Watched events that follow the cursor, then the deltas following only versions yielded; then whether to read. */
function* livePass(
  deltas: FeedInput,
  cursor: FeedCursor,
  target: FeedTarget,
  pass: PassState,
  pollMs: number,
  signal: AbortSignal,
): Generator<FeedFrame, void, undefined> {
  for (const frame of livePassFrames(deltas, cursor)) {
    yield frame;
    if (signal.aborted) return;
  }
  // The watch brought the first events: the poll counts from them, as from a read.
  if (pass.awaitingFirst && cursor.lastVersion > target.after) {
    pass.awaitingFirst = false;
    pass.readAt = Date.now();
  }
  pass.mustRead =
    deltas.queued.length > 0 ||
    deltas.committedAhead ||
    deltas.watched.size > 0 ||
    Date.now() - pass.readAt >= pollMs;
}

/** A read of the log after the cursor, its frames, and the deltas it lets out. */
async function* readPass(
  store: FeedSources['store'],
  target: FeedTarget,
  deltas: FeedInput,
  cursor: FeedCursor,
  pass: PassState,
  signal: AbortSignal,
): AsyncGenerator<FeedFrame, void, undefined> {
  pass.awaitingFirst = false;
  deltas.committedAhead = false;
  pass.since = store.appendCount;
  pass.readAt = Date.now();
  const events = await store.read(target.tenantId, target.streamName, {
    fromVersion: cursor.lastVersion + 1,
  });
  for (const frame of readPassFrames(events, deltas, cursor)) {
    yield frame;
    if (signal.aborted) return;
  }
  deltas.dropWatchedUpTo(cursor.lastVersion);
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

/**
 * After a wait: whether the log must be read. Only deltas woke the reader when the wake signal
 * fired; then it depends on what they follow (a commit ahead of the reader, an append, the poll).
 */
const logMayHaveMore = (deltas: FeedInput, appended: boolean, pollDue: boolean): boolean =>
  !deltas.wake.signal.aborted || deltas.committedAhead || appended || pollDue;

/**
 * A pass without a read: the watched events that follow the cursor one by one, then the deltas
 * that follow only versions yielded. Lazy and synchronous, like a read pass.
 */
function* livePassFrames(deltas: FeedInput, cursor: FeedCursor): Generator<FeedFrame, void, undefined> {
  yield* durableFrames(deltas.takeWatched(), deltas, cursor);
  yield* deltaFrames(deltas.takeFollowing(cursor.lastVersion), cursor);
}

/**
 * One read pass's frames: the log's events, then the deltas queued while they were read. Lazy and
 * synchronous, so the queue is taken only once the durable frames have gone out.
 */
function* readPassFrames(
  events: Parameters<typeof durableFrames>[0],
  deltas: FeedInput,
  cursor: FeedCursor,
): Generator<FeedFrame, void, undefined> {
  yield* durableFrames(events, deltas, cursor);
  yield* deltaFrames(deltas.queued.splice(0), cursor);
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

/**
 * The frames of events read or watched after the cursor's version, the cursor moved past each
 * event as it is taken; after each, the queued deltas that follow its version. They were streamed
 * before the next event was committed: a model call's deltas go out between turn.started and its
 * message.completed even when the reader takes the whole turn at once (it began after the turn
 * ran, or read the log), not after the turn's end, where a turn feed no longer writes them.
 */
function* durableFrames(
  events: Iterable<RecordedEvent>,
  deltas: FeedInput,
  cursor: FeedCursor,
): Generator<FeedFrame, void, undefined> {
  for (const event of events) {
    // Read strictly after lastVersion, so this only guards against a store answering out of range.
    if (event.version <= cursor.lastVersion) continue;
    cursor.lastVersion = event.version;
    const frame = durableFrame(event);
    if (frame) yield frame;
    yield* deltaFrames(deltas.takeFollowing(cursor.lastVersion), cursor);
  }
}

/** Whether a frame is ephemeral (`message.delta`, `context`: id `<version>.<seq>`), so it may be dropped. */
export const isEphemeralFrame = (frame: FeedFrame): boolean => frame.id.includes('.');
