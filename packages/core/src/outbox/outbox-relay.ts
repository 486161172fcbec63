import { messageOf } from '../errors/index.js';
import type { EventBus } from '../bus/index.js';
import type { AppendWatch, CommitNotices, EventStore, LogSequencer } from '../event-store/index.js';
import type { RecordedEvent } from '../typing/index.js';
import { uuidv7 } from '../typing/index.js';
import { sleep } from '../time/index.js';
import type { CheckpointStore, LeaseStore, RelayWakeups } from './ports.js';
import type { LogPort } from '../logging/index.js';

/** Settings of the outbox relay. */
export interface OutboxRelayOptions {
  /**
   * The global log it publishes, the sequencer that places commits in it, its appends to wake on,
   * and (for the fast path) this process's commits as they become durable.
   */
  store: Pick<EventStore, 'readAll'> & LogSequencer & AppendWatch & Partial<CommitNotices>;
  bus: EventBus;
  checkpoints: CheckpointStore;
  leases: LeaseStore;
  /** Checkpoint and lease name; one relay per log. Default `outbox`. */
  name?: string;
  /** Events published per round. Default 500. */
  batchSize?: number;
  /** How long an idle relay sleeps before looking again (an append in this process wakes it). */
  idleMs?: number;
  leaseTtlMs?: number;
  /**
   * How often the checkpoint is saved while events flow (and always when a drain ends). After a
   * crash the next relay republishes at most this much; JetStream drops the duplicates by event id.
   * Default 100 ms.
   */
  checkpointEveryMs?: number;
  /**
   * Notices between the processes sharing the log. With them a relay that does not hold the lease
   * places its own process's appends in the global log at once and wakes the holder, which
   * publishes them right away (without them the holder finds them at its next idle poll).
   */
  wakeups?: RelayWakeups;
  /**
   * The fast path (default on): every commit made through this process's store is published the
   * moment it is durable, before it is placed in the global log, whether or not this relay holds
   * the lease. See `OutboxRelay` for why the log stays the safety net.
   */
  publishOnCommit?: boolean;
  logger?: Pick<LogPort, 'info' | 'error' | 'warn'>;
}

/** What the relay has done, for metrics and readiness. */
export interface RelayStats {
  published: number;
  position: number;
  rounds: number;
  holdsLease: boolean;
  lastError?: string;
}

/**
 * The outbox: moves every committed event from the log to the bus, in global order, at least
 * once (the bus deduplicates by event id). It resumes from a durable checkpoint, so an event
 * committed by a process that died before publishing is published by whichever relay runs next.
 *
 * The fast path (`publishOnCommit`): each commit of this process is also published right after it
 * is durable, without waiting to be sequenced. Invariants that keep this safe:
 * - Delivery never depends on it: the relay still publishes every event from the log (a fast
 *   publish lost to a crash, a full buffer or a NATS error is published by the relay's round).
 * - Nothing is published before its commit is durable (the store tells the commit after its write).
 * - The same event id both times: JetStream stores the second publish once (Nats-Msg-Id, within the
 *   duplicate window); past the window a consumer sees it twice and is idempotent anyway.
 * - Per stream, one process's commits go out in commit order (told synchronously, one connection).
 *   Commits of one stream by two processes may reach the bus in either order, as a relay retry
 *   already could: consumers check versions (or load the stream), none trusts the bus's order.
 * - A fast-published event carries no global position (not placed yet): a consumer that needs
 *   one reads it from the log (the audit projector's catch-up does).
 */
export class OutboxRelay {
  readonly stats: RelayStats = { published: 0, position: 0, rounds: 0, holdsLease: false };
  private readonly owner = uuidv7();
  private readonly name: string;
  private readonly batchSize: number;
  private readonly idleMs: number;
  private readonly leaseTtlMs: number;
  private running: Promise<void> | undefined;
  private readonly abort = new AbortController();
  private leaseCheckedAt = 0;
  private readonly checkpointEveryMs: number;
  /** Published up to here; undefined until read from the checkpoint (again after a lease change). */
  private position: number | undefined;
  private savedPosition = 0;
  private savedAt = 0;
  /** Wake-up notices heard, and the waiting relay's way to end its wait early. */
  private wakes = 0;
  private endWait: (() => void) | undefined;
  private stopListening: (() => void) | undefined;
  private stopFastPath: (() => void) | undefined;
  /** Fast publishes sent and failed (metrics; a failure only delays the event to the relay's round). */
  readonly fastPath = { published: 0, failed: 0 };
  private readonly publishedListeners = new Set<(events: readonly RecordedEvent[]) => void>();

  constructor(private readonly options: OutboxRelayOptions) {
    this.name = options.name ?? 'outbox';
    this.batchSize = options.batchSize ?? 500;
    this.idleMs = options.idleMs ?? 100;
    this.leaseTtlMs = options.leaseTtlMs ?? 10_000;
    this.checkpointEveryMs = options.checkpointEveryMs ?? 100;
  }

  /** Starts the relay loop in the background. */
  start(): void {
    if (this.running) return;
    this.stopListening = this.options.wakeups?.listen(() => {
      this.wakes++;
      this.endWait?.();
    });
    if (this.options.publishOnCommit !== false && this.options.store.onCommitted) {
      this.stopFastPath = this.options.store.onCommitted((events) => this.publishAtOnce(events));
    }
    this.running = this.loop();
  }

  /** The fast path: publishes a commit just made durable here (best effort; the relay follows). */
  private publishAtOnce(events: readonly RecordedEvent[]): void {
    if (this.abort.signal.aborted) return;
    this.options.bus.publish([...events]).then(
      () => {
        this.fastPath.published += events.length;
      },
      (error: unknown) => {
        this.fastPath.failed += events.length;
        this.options.logger?.warn({ err: error }, 'fast publish failed; the relay publishes the commit');
        this.endWait?.();
      },
    );
  }

  /** Stops the loop after its current round, publishes what is still pending, releases the lease. */
  async stop(): Promise<void> {
    this.abort.abort();
    this.stopFastPath?.();
    this.stopListening?.();
    await this.running;
    if (this.stats.holdsLease) {
      await this.drain().catch((error: unknown) =>
        this.options.logger?.error({ err: error }, 'outbox flush failed'),
      );
      await this.options.leases.release(this.name, this.owner).catch(() => undefined);
      this.stats.holdsLease = false;
    }
  }

  /** Tells `listener` about every page of events this relay publishes (metrics); returns the way to stop. */
  onPublished(listener: (events: readonly RecordedEvent[]) => void): () => void {
    this.publishedListeners.add(listener);
    return () => this.publishedListeners.delete(listener);
  }

  /** When the oldest placed event this relay has not published yet was committed; undefined: none. */
  async oldestUnpublished(): Promise<string | undefined> {
    const page = await this.options.store.readAll({
      after: this.stats.position,
      limit: 1,
      scope: 'all-tenants',
    });
    return page.events[0]?.recordedAt;
  }

  /** Runs rounds until nothing is left to sequence or publish (regardless of the lease). */
  async drain(): Promise<void> {
    while ((await this.round(true)) > 0);
    await this.saveCheckpoint(true);
  }

  /**
   * One round: sequence, read a page after the checkpoint, publish it, save the checkpoint. A
   * round woken by another process's notice places only this process's commits (that process
   * placed its own), so no query for others' commits delays the publish.
   */
  async round(discover = false, woken = false): Promise<number> {
    const { store, bus, checkpoints } = this.options;
    const placed = await store.sequence(woken ? { ownOnly: true } : { discover });
    if (this.position === undefined) {
      this.position = await checkpoints.load(this.name);
      this.savedPosition = this.position;
    }
    const page = await store.readAll({ after: this.position, limit: this.batchSize, scope: 'all-tenants' });
    if (page.events.length > 0) {
      await bus.publish(page.events);
      for (const listener of this.publishedListeners) listener(page.events);
    }
    this.position = page.lastPosition;
    await this.saveCheckpoint(false);
    this.stats.published += page.events.length;
    this.stats.position = page.lastPosition;
    this.stats.rounds++;
    return placed + page.events.length;
  }

  private async saveCheckpoint(force: boolean): Promise<void> {
    if (this.position === undefined || this.position <= this.savedPosition) return;
    if (!force && Date.now() - this.savedAt < this.checkpointEveryMs) return;
    await this.options.checkpoints.save(this.name, this.position);
    this.savedPosition = this.position;
    this.savedAt = Date.now();
  }

  private async loop(): Promise<void> {
    const signal = this.abort.signal;
    let woken = false;
    while (!signal.aborted) {
      try {
        const seen = this.options.store.appendCount;
        const wakes = this.wakes;
        if (!(await this.holdLease())) {
          await this.standBy(seen);
          continue;
        }
        if ((await this.round(false, woken)) === 0) {
          await this.saveCheckpoint(true); // never sit idle on an unsaved position
          await this.idle(seen, wakes);
        }
        woken = this.wakes !== wakes;
        delete this.stats.lastError;
      } catch (error) {
        this.stats.lastError = messageOf(error);
        this.options.logger?.error({ err: error }, 'outbox round failed; retrying');
        await pause(500, signal);
      }
    }
  }

  /**
   * Without the lease: with wake-ups, places this process's own appends (fenced like any
   * sequencer's) and wakes the holder, then waits for the next append or the next lease check;
   * without them, just waits for the next lease check.
   */
  private async standBy(seen: number): Promise<void> {
    const { store, wakeups } = this.options;
    const wait = Math.max(0, this.leaseCheckedAt + this.leaseTtlMs / 4 - Date.now());
    if (!wakeups) return pause(wait, this.abort.signal);
    await store.sequence({ ownOnly: true, onPlaced: () => wakeups.notify() });
    await store.waitForAppend(wait, this.abort.signal, seen);
  }

  /** Holding the lease with nothing to do: waits for an append here, a wake-up notice, or `idleMs`. */
  private async idle(seen: number, wakes: number): Promise<void> {
    if (this.wakes !== wakes) return;
    const ended = new AbortController();
    const stop = (): void => ended.abort();
    this.abort.signal.addEventListener('abort', stop);
    this.endWait = stop;
    try {
      await this.options.store.waitForAppend(this.idleMs, ended.signal, seen);
    } finally {
      this.endWait = undefined;
      this.abort.signal.removeEventListener('abort', stop);
    }
  }

  private async holdLease(): Promise<boolean> {
    const now = Date.now();
    // Checked at most every quarter window, held or not (a process without it places its own appends).
    if (now - this.leaseCheckedAt < this.leaseTtlMs / 4) return this.stats.holdsLease;
    const held = await this.options.leases.tryAcquire(this.name, this.owner, this.leaseTtlMs);
    if (held !== this.stats.holdsLease) {
      this.options.logger?.info(
        { relay: this.name, held },
        held ? 'outbox lease acquired' : 'outbox lease held elsewhere',
      );
    }
    // A relay that gains or loses the lease rereads the checkpoint another one may have moved.
    if (held !== this.stats.holdsLease) this.position = undefined;
    this.stats.holdsLease = held;
    this.leaseCheckedAt = now;
    return held;
  }
}

/** A pause that a stop ends early (resolves, not rejects). */
const pause = (ms: number, signal: AbortSignal): Promise<void> => sleep(ms, signal).catch(() => undefined);
