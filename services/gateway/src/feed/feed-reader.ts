import type { AppendWatch, EphemeralChannel, EventStore } from '@keel/core';
import type { FeedFrame } from './feed-frames.js';
import { durableFrame, ephemeralFrame, ephemeralVersion } from './feed-frames.js';

/** Where a feed reads: the event log and the bus's ephemeral channel. */
export interface FeedSources {
  store: Pick<EventStore, 'read'> & AppendWatch;
  ephemeral: EphemeralChannel;
  /** Longest wait between two reads of the log when nothing woke the reader earlier. */
  pollMs: number;
  /** Deltas waiting for a consumer that does not pull beyond this many: the oldest are dropped. */
  maxQueuedDeltas?: number;
}

/** Which conversation a feed reads, and from where. */
export interface FeedTarget {
  tenantId: string;
  conversationId: string;
  streamName: string;
  /** Last version the client has: the feed yields what follows. */
  after: number;
}

/** Deltas a reader holds for a consumer that stopped pulling, unless the sources say otherwise. */
export const DEFAULT_MAX_QUEUED_DELTAS = 1_000;

/**
 * The frames of a conversation's feed: its durable events from the log after `target.after`, then
 * live ones, merged with its ephemeral deltas; until `signal` aborts (or the consumer stops).
 *
 * No gap, no duplicate: the log is the only source of durable events. The reader remembers the
 * last version it yielded and reads strictly after it, one read at a time, so a version is yielded
 * at most once and none is skipped (per-stream versions are dense). Latency: a read runs at once
 * when a delta or context message arrives that follows a version not yielded yet (the agent sends
 * one after each step it records), when this process appends (the dev mode's in-process agent),
 * and otherwise every `pollMs`.
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
  const { store, ephemeral, pollMs } = sources;
  const maxQueued = sources.maxQueuedDeltas ?? DEFAULT_MAX_QUEUED_DELTAS;
  const { tenantId, conversationId, streamName } = target;
  const queued: unknown[] = [];
  let wake = new AbortController();
  let lastVersion = target.after;
  let lastSeq = 0;
  if (signal.aborted) return;
  // Subscribed before the first read: nothing published from here on is missed.
  const subscription = ephemeral.subscribe({ kind: 'deltas', tenantId, conversationId }, (message) => {
    if (queued.length >= maxQueued) queued.shift();
    queued.push(message.data);
    wake.abort();
  });
  // The first pass reads; later ones read only when something may be in the log that was not yielded.
  let mustRead = true;
  let since = 0;
  let readAt = 0;
  try {
    while (!signal.aborted) {
      wake = new AbortController();
      if (!mustRead) {
        // Deltas following only versions yielded already go out without a read of the log.
        while (queued.length > 0 && (ephemeralVersion(queued[0]) ?? Infinity) <= lastVersion) {
          const mapped = ephemeralFrame(queued.shift(), lastVersion, lastSeq);
          if (!mapped) continue;
          lastSeq = mapped.seq;
          yield mapped.frame;
          if (signal.aborted) return;
        }
        mustRead = queued.length > 0 || Date.now() - readAt >= pollMs;
      }
      if (mustRead) {
        since = store.appendCount;
        readAt = Date.now();
        const events = await store.read(tenantId, streamName, { fromVersion: lastVersion + 1 });
        for (const event of events) {
          // Read strictly after lastVersion, so this only guards against a store answering out of range.
          if (event.version <= lastVersion) continue;
          lastVersion = event.version;
          const frame = durableFrame(event);
          if (frame) yield frame;
          if (signal.aborted) return;
        }
        for (const message of queued.splice(0)) {
          const mapped = ephemeralFrame(message, lastVersion, lastSeq);
          if (!mapped) continue;
          lastSeq = mapped.seq;
          yield mapped.frame;
          if (signal.aborted) return;
        }
      }
      mustRead = false;
      if (queued.length > 0) continue;
      const woken = AbortSignal.any([wake.signal, signal]);
      await store.waitForAppend(Math.max(0, readAt + pollMs - Date.now()), woken, since);
      // Only deltas woke the reader: whether the log must be read depends on what they follow.
      mustRead = !wake.signal.aborted || store.appendCount !== since || Date.now() - readAt >= pollMs;
    }
  } finally {
    subscription.unsubscribe();
  }
}

/** Whether a frame is ephemeral (`message.delta`, `context`: id `<version>.<seq>`), so it may be dropped. */
export const isEphemeralFrame = (frame: FeedFrame): boolean => frame.id.includes('.');
