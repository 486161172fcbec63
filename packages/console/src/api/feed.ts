// An SSE feed read with fetch (so that the Authorization header goes along; EventSource cannot send
// it), parsed by eventsource-parser, reconnecting with Last-Event-ID after a drop.
import { createParser } from 'eventsource-parser';
import { useEffect, useRef, useState } from 'react';
import { describeError } from './problem';
import type { Session } from './session';
import type { FeedEvent } from './types';

/** Whether a feed is being opened, is open, or dropped (it is retried). */
export type FeedStatus = { state: 'connecting' } | { state: 'live' } | { state: 'error'; message: string };

const RECONNECT_MS = 2000;

/** Reads `path` until `signal` aborts; each frame goes to `onEvent`. Resolves when the stream ends. */
const readFeed = async (
  session: Session,
  path: string,
  tenant: string | undefined,
  lastEventId: { current: string | undefined },
  onOpen: () => void,
  onEvent: (event: FeedEvent) => void,
  signal: AbortSignal,
): Promise<void> => {
  const response = await session.fetchRaw(path, {
    accept: 'text/event-stream',
    tenant,
    signal,
    lastEventId: lastEventId.current,
  });
  onOpen();
  const parser = createParser({
    onEvent: (message) => {
      if (message.id !== undefined) lastEventId.current = message.id;
      let data: Record<string, unknown> = {};
      try {
        data = JSON.parse(message.data) as Record<string, unknown>;
      } catch {
        return;
      }
      onEvent({ id: message.id ?? '', event: message.event ?? 'message', data });
    },
  });
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    parser.feed(value);
  }
};

/**
 * Follows the feed at `path` (undefined: none) while the component is mounted; `onEvent` gets
 * every frame, replayed ones included. The status says whether it is live.
 */
export const useFeed = (
  session: Session,
  path: string | undefined,
  tenant: string | undefined,
  onEvent: (event: FeedEvent) => void,
): FeedStatus => {
  const [status, setStatus] = useState<FeedStatus>({ state: 'connecting' });
  const handler = useRef(onEvent);
  handler.current = onEvent;

  useEffect(() => {
    if (path === undefined) return;
    const controller = new AbortController();
    const lastEventId: { current: string | undefined } = { current: undefined };
    const follow = async () => {
      while (!controller.signal.aborted) {
        setStatus({ state: 'connecting' });
        try {
          await readFeed(
            session,
            path,
            tenant,
            lastEventId,
            () => setStatus({ state: 'live' }),
            (event) => handler.current(event),
            controller.signal,
          );
        } catch (error) {
          if (controller.signal.aborted) return;
          setStatus({ state: 'error', message: describeError(error) });
        }
        await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS));
      }
    };
    void follow();
    return () => controller.abort();
  }, [session, path, tenant]);

  return status;
};
