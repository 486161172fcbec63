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
  const frames = new RunFrames(sources, target);
  const stop = new AbortController();
  const pump = (async () => {
    for await (const frame of readFeed(sources, target, AbortSignal.any([signal, stop.signal]))) {
      frames.durable(frame);
    }
  })().finally(() => frames.finish());
  try {
    for (;;) {
      const next = frames.queue.shift();
      if (next) {
        yield next;
        continue;
      }
      if (frames.finished || signal.aborted) return;
      await frames.nextPush();
    }
  } finally {
    stop.abort();
    frames.close();
    await pump;
  }
}

/** The run feed's merge: durable frames as read, each running task's deltas in between. */
class RunFrames {
  readonly queue: FeedFrame[] = [];
  finished = false;
  readonly #following = new Map<string, { unsubscribe(): void }>();
  #wake = (): void => {};
  #lastVersion: number;
  #n = 0;

  constructor(
    private readonly sources: FeedSources,
    private readonly target: FeedTarget,
  ) {
    this.#lastVersion = target.after;
  }

  /** A frame of the run's log: it starts or ends following a task's deltas. */
  durable(frame: FeedFrame): void {
    this.#lastVersion = Number(frame.id);
    this.#n = 0;
    const data = frame.data as { taskId?: string; conversationId?: string };
    if (frame.event === 'task.started' && data.taskId && data.conversationId) {
      this.#follow(data.taskId, data.conversationId);
    }
    if (TASK_ENDS.has(frame.event) && data.taskId) this.#following.get(data.taskId)?.unsubscribe();
    this.#push(frame);
  }

  nextPush(): Promise<void> {
    return new Promise<void>((resolve) => (this.#wake = resolve));
  }

  finish(): void {
    this.finished = true;
    this.#wake();
  }

  close(): void {
    for (const subscription of this.#following.values()) subscription.unsubscribe();
  }

  #push(frame: FeedFrame): void {
    this.queue.push(frame);
    this.#wake();
  }

  #follow(taskId: string, conversationId: string): void {
    const scope = { kind: 'deltas' as const, tenantId: this.target.tenantId, conversationId };
    const subscription = this.sources.ephemeral.subscribe(scope, (message) => {
      const delta = ephemeralFrame(message.data, this.#lastVersion, 0);
      if (delta?.frame.event !== 'message.delta') return;
      this.#push({
        ...delta.frame,
        id: `${this.#lastVersion}.${++this.#n}`,
        data: { ...(delta.frame.data as object), taskId },
      });
    });
    this.#following.set(taskId, subscription);
  }
}
