import type { AppendWatch, EventStore, TenantScope } from '@keel/core';
import { conversationOf } from '../activity/activity.js';
import type { FeedFrame } from './feed-frames.js';
import { durableFrame } from './feed-frames.js';

/** Where a log feed reads: the global log, woken by this process's appends, else every `pollMs`. */
export interface LogFeedSources {
  store: Pick<EventStore, 'readAll'> & AppendWatch;
  pollMs: number;
}

/** Events read per page. */
const PAGE = 500;

/**
 * The frames of a log feed (`GET /v1/events`, `GET /v1/operator/events`): every durable
 * conversation event of the scope (one tenant, or all) after global position `after`, then live
 * ones, until `signal` aborts. A frame is the conversation feed's frame (same names and data)
 * with `conversationId` and `tenantId` added, and its id is the event's global log position, so
 * `Last-Event-ID` resumes after it with no gap and no duplicate: positions only grow, and the log
 * returns only sequenced commits, so a reader that resumes from the last position it saw never
 * skips an event committed later. Ephemeral deltas are not part of it (a conversation's feed has them).
 */
export async function* readLogFeed(
  sources: LogFeedSources,
  scope: TenantScope,
  after: number,
  signal: AbortSignal,
): AsyncGenerator<FeedFrame, void, undefined> {
  const { store, pollMs } = sources;
  let position = after;
  while (!signal.aborted) {
    const since = store.appendCount;
    const page = await store.readAll({ scope, after: position, limit: PAGE });
    for (const event of page.events) {
      // A conversation's events carry its conversationId; a run's (`run-<id>`) its runId.
      const conversationId = conversationOf(event.streamName);
      const runId = event.streamName.startsWith('run-') ? event.streamName.slice('run-'.length) : undefined;
      const source =
        conversationId !== undefined ? { conversationId } : runId !== undefined ? { runId } : undefined;
      const frame = source === undefined ? undefined : durableFrame(event);
      if (frame && event.globalPosition !== undefined) {
        yield {
          id: String(event.globalPosition),
          event: frame.event,
          data: { ...(frame.data as object), ...source, tenantId: event.tenantId },
        };
        if (signal.aborted) return;
      }
    }
    const full = page.events.length >= PAGE;
    position = Math.max(position, page.lastPosition);
    if (!full) await store.waitForAppend(pollMs, signal, since);
  }
}
