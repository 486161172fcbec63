import type { EventMetadata, EventStore, RecordedEvent } from '@keel/core';
import { isEvent } from '@keel/core';
import type { PriceSet } from './price-events.js';
import { PRICE_OVERRIDE_STREAM, PRICING_TENANT_ID } from './price-events.js';
import { PriceTimeline } from './price-timeline.js';

/**
 * This instance's fold of the price override stream, kept fresh enough for each question.
 *
 * Freshness: an override never takes effect before it is appended (SetPrice refuses a past
 * `effectiveFrom`), so a read of the stream that started at instant T knows every price in force
 * at any instant before T. A question about instant `at` therefore waits for a read that started
 * after `min(at, now)`; concurrent questions share such a read. Another instance's override
 * is seen by the next question after it was appended, with no bus and no polling interval.
 */
export class PriceOverrideLog {
  readonly timeline = new PriceTimeline();
  private folded = 0;
  /** Start instant of the last read that completed. */
  private freshFrom = Number.NEGATIVE_INFINITY;
  private running: { startedAt: number; done: Promise<void> } | undefined;
  private queued: Promise<void> | undefined;

  constructor(
    private readonly store: EventStore,
    private readonly clock: () => number = Date.now,
  ) {}

  /** The stream version folded so far (the number of overrides known). */
  get version(): number {
    return this.folded;
  }

  /** Resolves once the overrides in force at `atMs` (or now, if earlier) are all folded. */
  async freshFor(atMs: number): Promise<void> {
    const needed = Math.min(atMs, this.clock());
    if (this.freshFrom > needed) return;
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

  /** Appends an override and folds it (with any other instance's appended meanwhile). */
  async append(event: PriceSet, metadata: EventMetadata): Promise<void> {
    await this.store.append(PRICING_TENANT_ID, PRICE_OVERRIDE_STREAM, [{ ...event, metadata }]);
    await this.catchUp();
  }

  private async readNew(startedAt: number): Promise<void> {
    const events = await this.store.read(PRICING_TENANT_ID, PRICE_OVERRIDE_STREAM, {
      fromVersion: this.folded + 1,
    });
    for (const event of events) this.apply(event);
    this.freshFrom = Math.max(this.freshFrom, startedAt);
  }

  private apply(recorded: RecordedEvent): void {
    if (recorded.version !== this.folded + 1) return;
    if (isEvent<PriceSet>(recorded, 'PriceSet')) this.timeline.apply(recorded, recorded.version);
    this.folded = recorded.version;
  }
}
