import type {
  EventBus,
  EventMetadata,
  EventStore,
  RecordedEvent,
  WatchedStreams,
  WatchMark,
} from '@keel/core';
import { HeardVersions, isEvent } from '@keel/core';
import type { PriceSet } from './price-events.js';
import { PRICE_OVERRIDE_STREAM, PRICING_TENANT_ID } from './price-events.js';
import { PriceTimeline } from './price-timeline.js';

/** How long SetPrice waits to see its own override arrive on the bus before answering anyway. */
export const OVERRIDE_PUBLISH_WAIT_MS = 2_000;

/** How long a read waits for the stream's watch to be live before reading without it (NATS stuck). */
const WATCH_LIVE_WAIT_MS = 1_000;

/** The bus's watch of the override stream (see `PriceOverrideLog`); absent: every question reads. */
export interface OverrideWatch {
  watched: WatchedStreams;
  bus: Pick<EventBus, 'watch'>;
  /** Told when SetPrice answers without having seen its override on the bus. */
  onUnheard?: (version: number) => void;
  publishWaitMs?: number;
}

/**
 * This instance's fold of the price override stream, kept fresh enough for each question.
 *
 * Freshness: an override never takes effect before it is appended (SetPrice refuses a past
 * `effectiveFrom`), so a read of the stream that started at instant T knows every price in force
 * at any instant before T. A question about instant `at` therefore waits for a read that started
 * after `min(at, now)`; concurrent questions share such a read. With the bus's watch
 * (WatchedStreams) a question needs no read while the watch vouches for the fold: live before
 * the last read, no newer override seen on the bus since, that read under KEEL_WATCH_MAX_AGE_MS
 * old. So another instance's override is seen once its event arrives on the bus; SetPrice waits
 * (at most OVERRIDE_PUBLISH_WAIT_MS) until its own watch has received it before answering, and
 * NATS sends it to every subscribed instance as it takes it, so a question reaching any instance
 * after SetPrice answered sees it (unless that instance has not yet handled a message already on
 * its socket: a millisecond or so). A publish lost (NATS down) leaves another instance on its
 * fold for at most the watch's max age (5 s by default). Without a watch every question that
 * needs a fresher fold reads, as before.
 */
export class PriceOverrideLog {
  readonly timeline = new PriceTimeline();
  private folded = 0;
  /** Start instant of the last read that completed. */
  private freshFrom = Number.NEGATIVE_INFINITY;
  private running: { startedAt: number; done: Promise<void> } | undefined;
  private queued: Promise<void> | undefined;
  /** The highest override version this instance's watch has received, and who waits for one. */
  private readonly heard = new HeardVersions();
  private watching: { unsubscribe(): void } | undefined;

  constructor(
    private readonly store: EventStore,
    private readonly clock: () => number = Date.now,
    private readonly watch?: OverrideWatch,
  ) {}

  /** Listens to the stream on the bus (for SetPrice's wait); call before the first question. */
  listen(): void {
    if (!this.watch?.watched.enabled || this.watching) return;
    this.watching = this.watch.bus.watch?.(
      { tenantId: PRICING_TENANT_ID, streamName: PRICE_OVERRIDE_STREAM },
      (event) => this.heard.hear(event.version),
    );
  }

  /** Stops listening (shutdown). */
  close(): void {
    this.watching?.unsubscribe();
    this.watching = undefined;
    this.heard.close();
  }

  /** The stream version folded so far (the number of overrides known). */
  get version(): number {
    return this.folded;
  }

  /** Resolves once the overrides in force at `atMs` (or now, if earlier) are all folded. */
  async freshFor(atMs: number): Promise<void> {
    const needed = Math.min(atMs, this.clock());
    if (this.freshFrom > needed) return;
    if (this.watch?.watched.isCurrentAt(PRICING_TENANT_ID, PRICE_OVERRIDE_STREAM, this.folded)) return;
    if (this.running && this.running.startedAt > needed) return this.running.done;
    return this.catchUp();
  }

  /** Folds every override appended before this call. */
  catchUp(): Promise<void> {
    if (!this.running) {
      const startedAt = this.clock();
      const done = this.readNew(startedAt).finally(() => {
        this.running = undefined;
      });
      this.running = { startedAt, done };
      return done;
    }
    // A read is in flight, but it may have started before this caller: wait for the next one.
    this.queued ??= this.running.done
      .catch(() => undefined)
      .then(() => {
        this.queued = undefined;
        return this.catchUp();
      });
    return this.queued;
  }

  /**
   * Appends an override and folds it (with any other instance's appended meanwhile), then waits
   * until the bus has brought it back to this instance (see the class comment).
   */
  async append(event: PriceSet, metadata: EventMetadata): Promise<void> {
    const { nextExpectedVersion } = await this.store.append(PRICING_TENANT_ID, PRICE_OVERRIDE_STREAM, [
      { ...event, metadata },
    ]);
    await this.catchUp();
    const waitMs = this.watch?.publishWaitMs ?? OVERRIDE_PUBLISH_WAIT_MS;
    if (this.watching && !(await this.heard.waitFor(nextExpectedVersion, waitMs)))
      this.watch?.onUnheard?.(nextExpectedVersion);
  }

  private async readNew(startedAt: number): Promise<void> {
    const mark = await this.liveWatch();
    const events = await this.store.read(PRICING_TENANT_ID, PRICE_OVERRIDE_STREAM, {
      fromVersion: this.folded + 1,
    });
    for (const event of events) this.apply(event);
    this.freshFrom = Math.max(this.freshFrom, startedAt);
    this.watch?.watched.verified(PRICING_TENANT_ID, PRICE_OVERRIDE_STREAM, this.folded, mark);
  }

  /** The stream's watch once live (undefined without one, or when NATS does not answer in time). */
  private async liveWatch(): Promise<WatchMark | undefined> {
    if (!this.watch?.watched.enabled) return undefined;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), WATCH_LIVE_WAIT_MS).unref();
    });
    try {
      return await Promise.race([this.watch.watched.watch(PRICING_TENANT_ID, PRICE_OVERRIDE_STREAM), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  private apply(recorded: RecordedEvent): void {
    if (recorded.version !== this.folded + 1) return;
    if (isEvent<PriceSet>(recorded, 'PriceSet')) this.timeline.apply(recorded, recorded.version);
    this.folded = recorded.version;
  }
}
