import type { FeedFrame } from '../feed/feed-frames.js';
import { ephemeralFrame } from '../feed/feed-frames.js';
import type { FeedSources, FeedTarget } from '../feed/feed-reader.js';
import { readFeed } from '../feed/feed-reader.js';

const TASK_ENDS: ReadonlySet<string> = new Set(['task.completed', 'task.failed']);

/**
 * A run's feed: its durable frames from the log (readFeed on the run's stream), merged with the
 * ephemeral `message.delta`s of its running tasks' turns, each with its `taskId` and the id
 * `<run version>.<n>`. A task's deltas are followed from its `task.started` frame to its end.
 */
export async function* readRunFeed(
  sources: FeedSources,
  target: FeedTarget,
  signal: AbortSignal,
): AsyncGenerator<FeedFrame, void, undefined> {
  const queue: FeedFrame[] = [];
  const following = new Map<string, { unsubscribe(): void }>();
  let wake = (): void => {};
  let lastVersion = target.after;
  let n = 0;
  let finished = false;
  const push = (frame: FeedFrame): void => {
    queue.push(frame);
    wake();
  };
  const follow = (taskId: string, conversationId: string): void => {
    const scope = { kind: 'deltas' as const, tenantId: target.tenantId, conversationId };
    const subscription = sources.ephemeral.subscribe(scope, (message) => {
      const delta = ephemeralFrame(message.data, lastVersion, 0);
      if (delta?.frame.event !== 'message.delta') return;
      push({
        ...delta.frame,
        id: `${lastVersion}.${++n}`,
        data: { ...(delta.frame.data as object), taskId },
      });
    });
    following.set(taskId, subscription);
  };
  const stop = new AbortController();
  const pump = (async () => {
    for await (const frame of readFeed(sources, target, AbortSignal.any([signal, stop.signal]))) {
      lastVersion = Number(frame.id);
      n = 0;
      const data = frame.data as { taskId?: string; conversationId?: string };
      if (frame.event === 'task.started' && data.taskId && data.conversationId)
        follow(data.taskId, data.conversationId);
      if (TASK_ENDS.has(frame.event) && data.taskId) following.get(data.taskId)?.unsubscribe();
      push(frame);
    }
  })().finally(() => {
    finished = true;
    wake();
  });
  try {
    for (;;) {
      const next = queue.shift();
      if (next) {
        yield next;
        continue;
      }
      if (finished || signal.aborted) return;
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    stop.abort();
    for (const subscription of following.values()) subscription.unsubscribe();
    await pump;
  }
}
