import type { RecordedEvent } from '../typing/index.js';

/**
 * Counts this process's appends and wakes whoever waits for the next one. A waiter passes the
 * count it last saw, so an append that lands between its look and its wait is never missed.
 */
export class AppendSignal {
  private appends = 0;
  private waiters = new Set<() => void>();
  private readonly committed = new Set<(events: readonly RecordedEvent[]) => void>();

  /** Calls `listener` with every commit's events (see CommitNotices); returns the way to stop. */
  onCommitted(listener: (events: readonly RecordedEvent[]) => void): () => void {
    this.committed.add(listener);
    return () => this.committed.delete(listener);
  }

  /** Appends seen so far in this process. */
  get count(): number {
    return this.appends;
  }

  /**
   * Records an append, tells the commit listeners its events (a listener that throws does not stop
   * the append, which is durable already), and wakes every waiter.
   */
  notify(events: readonly RecordedEvent[] = []): void {
    this.appends++;
    if (events.length > 0) {
      for (const listener of this.committed) {
        try {
          listener(events);
        } catch {
          // A listener's failure is its own (the relay publishes the commit anyway).
        }
      }
    }
    this.release();
  }

  /** Wakes every waiter without an append (e.g. on close). */
  release(): void {
    const waiters = this.waiters;
    this.waiters = new Set();
    for (const w of waiters) w();
  }

  /** Resolves on the next append, at once if one happened since `since`, or after `timeoutMs`. */
  wait(timeoutMs: number, signal?: AbortSignal, since?: number): Promise<void> {
    if ((since !== undefined && since !== this.appends) || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      signal?.addEventListener('abort', done);
      this.waiters.add(done);
    });
  }
}
