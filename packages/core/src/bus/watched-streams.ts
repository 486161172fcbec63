import type { EphemeralSubscription } from './ephemeral.js';
import type { EventBus } from './event-bus.js';

/** What `WatchedStreams` needs of the bus: its stream watches and a round trip to its server. */
export type WatchingBus = Pick<EventBus, 'watch' | 'ping'> & {
  /** False when the bus's watches are switched off (they would never tell anything). */
  readonly watching?: boolean;
};

export interface WatchedStreamsOptions {
  /** How long a read of the log vouches for a watched stream (default 5,000 ms). */
  maxAgeMs?: number;
  /** Streams watched at once; the least recently used stop being watched first (default 5,000). */
  capacity?: number;
  now?: () => number;
}

/** Proof that a watch was live when it was handed out: a read started after it is covered. */
export interface WatchMark {
  readonly key: string;
  readonly generation: number;
}

interface Watch {
  generation: number;
  subscription: EphemeralSubscription;
  /** Settles once the bus's server has the subscription (a round trip after subscribing). */
  live: Promise<boolean>;
  /** The highest version any event of the stream seen on the bus had. */
  seen: number;
  /** The version a read of the log found the stream at, and when that read was reported. */
  verified?: { version: number; at: number };
}

/**
 * Which streams this process may trust a cached fold of without reading the log's tail.
 *
 * Invariant: `isCurrentAt(stream, v)` is true only if (1) a watch on the stream was live on the
 * bus before a read of the log found it at some version, (2) no event with a version above `v`
 * has been seen on the bus since, and (3) that read was reported less than `maxAgeMs` ago. Every
 * commit is published (at once by its writer's fast path, else by the relay), so a change made
 * by another process is seen when its event arrives — normally a millisecond or two after its
 * commit — instead of by the next read. A publish missed while the connection was down costs at
 * most `maxAgeMs` of staleness: then the caller reads again and reports it.
 */
export class WatchedStreams {
  readonly #bus: WatchingBus;
  readonly #maxAgeMs: number;
  readonly #capacity: number;
  readonly #now: () => number;
  readonly #watches = new Map<string, Watch>();
  #generations = 0;

  constructor(bus: WatchingBus, options: WatchedStreamsOptions = {}) {
    this.#bus = bus;
    this.#maxAgeMs = options.maxAgeMs ?? 5_000;
    this.#capacity = Math.max(1, options.capacity ?? 5_000);
    this.#now = options.now ?? Date.now;
  }

  /** Whether watches can vouch for anything here (the bus watches streams). */
  get enabled(): boolean {
    return this.#bus.watch !== undefined && this.#bus.watching !== false;
  }

  /**
   * Watches the stream (once) and resolves when the watch is live: a read of the log started
   * after this resolves may be reported with `verified`. Undefined when the bus cannot watch.
   */
  async watch(tenantId: string, streamName: string): Promise<WatchMark | undefined> {
    if (!this.enabled) return undefined;
    const key = keyOf(tenantId, streamName);
    const watch = this.#watches.get(key) ?? this.#start(tenantId, streamName, key);
    this.#touch(key, watch);
    return (await watch.live) ? { key, generation: watch.generation } : undefined;
  }

  /**
   * Reports that a read of the log, started after `mark` was handed out, found the stream at
   * `version` (its last event's version, 0 for none).
   */
  verified(tenantId: string, streamName: string, version: number, mark: WatchMark | undefined): void {
    const watch = mark && this.#watches.get(mark.key);
    if (!watch || watch.generation !== mark.generation || mark.key !== keyOf(tenantId, streamName)) return;
    watch.verified = { version, at: this.#now() };
  }

  /** Whether a fold of the stream at `version` is known to miss no event (see the class invariant). */
  isCurrentAt(tenantId: string, streamName: string, version: number): boolean {
    const watch = this.#watches.get(keyOf(tenantId, streamName));
    const verified = watch?.verified;
    if (!watch || !verified || this.#now() - verified.at >= this.#maxAgeMs) return false;
    if (version < Math.max(verified.version, watch.seen)) return false;
    this.#touch(keyOf(tenantId, streamName), watch);
    return true;
  }

  /** Stops every watch. */
  close(): void {
    for (const watch of this.#watches.values()) watch.subscription.unsubscribe();
    this.#watches.clear();
  }

  #start(tenantId: string, streamName: string, key: string): Watch {
    const watch: Watch = {
      generation: ++this.#generations,
      subscription: { unsubscribe: () => undefined },
      live: Promise.resolve(false),
      seen: 0,
    };
    watch.subscription = this.#bus.watch!({ tenantId, streamName }, (event) => {
      if (event.version > watch.seen) watch.seen = event.version;
    });
    // The round trip makes the server hold the subscription before any read it vouches for starts.
    watch.live = this.#bus.ping().then(
      () => true,
      () => {
        if (this.#watches.get(key) === watch) this.#forget(key, watch);
        return false;
      },
    );
    this.#watches.set(key, watch);
    if (this.#watches.size > this.#capacity) {
      const [oldestKey, oldest] = this.#watches.entries().next().value!;
      this.#forget(oldestKey, oldest);
    }
    return watch;
  }

  /** Keeps the map in least-recently-used order. */
  #touch(key: string, watch: Watch): void {
    this.#watches.delete(key);
    this.#watches.set(key, watch);
  }

  #forget(key: string, watch: Watch): void {
    watch.subscription.unsubscribe();
    this.#watches.delete(key);
  }
}

const keyOf = (tenantId: string, streamName: string): string => `${tenantId}\u0000${streamName}`;

/**
 * The highest version of one stream this process has heard on the bus, and waits for a version
 * to be heard: a writer that answers only once its own event came back from the bus knows every
 * process subscribed on the same server has been sent it.
 */
export class HeardVersions {
  #heard = 0;
  readonly #waiters = new Set<{ version: number; settle: (heard: boolean) => void }>();

  get heard(): number {
    return this.#heard;
  }

  /** Counts a version seen on the bus; wakes the waits it satisfies. */
  hear(version: number): void {
    if (version <= this.#heard) return;
    this.#heard = version;
    for (const waiter of this.#waiters) if (waiter.version <= version) waiter.settle(true);
  }

  /** Resolves true once `version` has been heard, false after `timeoutMs`. */
  waitFor(version: number, timeoutMs: number): Promise<boolean> {
    if (this.#heard >= version) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter = {
        version,
        settle: (heard: boolean) => {
          clearTimeout(timer);
          this.#waiters.delete(waiter);
          resolve(heard);
        },
      };
      const timer = setTimeout(() => waiter.settle(false), timeoutMs);
      this.#waiters.add(waiter);
    });
  }

  /** Ends every wait (shutdown): nothing more will be heard, and no writer should warn of it. */
  close(): void {
    for (const waiter of this.#waiters) waiter.settle(true);
  }
}
