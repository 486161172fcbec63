import { messageOf } from '../errors/index.js';
import type { EventBus } from '../bus/index.js';
import type {
  AppendWatch,
  CommitNotices,
  EventStore,
  LogSequencer,
  PlacedPage,
} from '../event-store/index.js';
import { AppendSignal } from '../event-store/index.js';
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
  /**
   * How long an idle relay sleeps before looking again (an append in this process, or a notice
   * of another's, wakes it). Default 1000 ms with wake-ups (the poll only covers a lost notice),
   * else 100 ms.
   */
  idleMs?: number;
  leaseTtlMs?: number;
  /**
   * How often at most the checkpoint is saved (and always when a drain ends); an idle relay saves
   * a position once this long has passed. After a crash the next relay republishes at most this
   * much; JetStream drops the duplicates by event id (its duplicate window is minutes).
   * Default 1000 ms.
   */
  checkpointEveryMs?: number;
  /**
   * Notices between the processes sharing the log. With them a relay that does not hold the lease
   * places its own process's appends in the global log at once and tells the page to the others:
   * the holder publishes it right away from the notice, without reading the log (without them the
   * holder finds it at its next idle poll), and every sequencer learns where the log ends.
   */
  wakeups?: RelayWakeups;
  /**
   * The fast path (default on): every commit made through this process's store is published the
   * moment it is durable, before it is placed in the global log, whether or not this relay holds
   * the lease. See `OutboxRelay` for why the log stays the safety net.
   */
  publishOnCommit?: boolean;
  /**
   * How long, after an append of this process, the relay waits before placing it in the global
   * log, so that the commits that follow share its page: one page and one marker write for a
   * turn's few commits instead of one each. Only where placing is off the hot path: default 100 ms
   * with the fast path and wake-ups (every commit is on the bus at once; the placing serves the
   * relay's safety net, projections and the log feed), else 0.
   */
  placeBatchMs?: number;
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
  private readonly placeBatchMs: number;
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
  /** Pages placed here or told by other processes (see `waitForPlaced`). */
  private readonly placed = new AppendSignal();
  /** Whether the last round read a whole batch (more may follow at once). */
  private readFull = false;
  private roundsDone: Promise<unknown> = Promise.resolve();
  /** When a round last let the sequencer look for other processes' commits. */
  private openRoundAt = 0;

  constructor(private readonly options: OutboxRelayOptions) {
    this.name = options.name ?? 'outbox';
    this.batchSize = options.batchSize ?? 500;
    this.idleMs = options.idleMs ?? (options.wakeups ? 1000 : 100);
    this.leaseTtlMs = options.leaseTtlMs ?? 10_000;
    this.checkpointEveryMs = options.checkpointEveryMs ?? 1000;
    const fastPath = options.publishOnCommit !== false && options.store.onCommitted !== undefined;
    this.placeBatchMs = options.placeBatchMs ?? (fastPath && options.wakeups ? 100 : 0);
  }

  /** Starts the relay loop in the background. */
  start(): void {
    if (this.running) return;
    this.stopListening = this.options.wakeups?.listen((page) => {
      if (page) this.options.store.learnPlaced?.(page);
      this.wakes++;
      this.placed.notify();
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

  /**
   * The global position of an event placed lately, by this process or another that told it (no
   * query); undefined when not known here (not placed yet, placed long ago, or a notice lost).
   */
  positionOf(eventId: string): number | undefined {
    return this.options.store.placedPosition?.(eventId);
  }

  /** Pages placed here or told so far; pass it to `waitForPlaced` so none is missed. */
  get placedCount(): number {
    return this.placed.count;
  }

  /** Resolves once a page is placed here or told by another process after `since`, or after `timeoutMs`. */
  waitForPlaced(timeoutMs: number, since?: number, signal?: AbortSignal): Promise<void> {
    return this.placed.wait(timeoutMs, signal, since);
  }

  /** A page this process placed: told to the other processes and to local waiters. */
  private placedHere = (page: PlacedPage): void => {
    this.options.wakeups?.notify(page);
    this.placed.notify();
  };

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
   * placed its own), so no query for others' commits delays the publish; but at least every
   * `idleMs` a round may look for them (when the sequencer's interval says so), so commits
   * orphaned by a dead process are placed even while notices never stop.
   */
  round(discover = false, woken = false): Promise<number> {
    // One at a time (a drain may run beside the loop): two reading from one position publish twice.
    const run = this.roundsDone.then(() => this.roundAlone(discover, woken));
    this.roundsDone = run.catch(() => undefined);
    return run;
  }

  private async roundAlone(discover: boolean, woken: boolean): Promise<number> {
    const { store, bus, checkpoints } = this.options;
    const onPlaced = this.placedHere;
    const ownOnly = woken && Date.now() - this.openRoundAt < this.idleMs;
    if (!ownOnly) this.openRoundAt = Date.now();
    const placed = await store.sequence(ownOnly ? { ownOnly, onPlaced } : { discover, onPlaced });
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
    this.readFull = page.events.length >= this.batchSize;
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

  /** How long until an unsaved position is due to be saved (Infinity: none). */
  private untilCheckpointDue(): number {
    if (this.position === undefined || this.position <= this.savedPosition) return Number.POSITIVE_INFINITY;
    return Math.max(0, this.savedAt + this.checkpointEveryMs - Date.now());
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
          await this.gather(seen);
          continue;
        }
        // Past the end of the log as read: wait for the next append or notice (or the poll).
        if ((await this.round(false, woken)) === 0 || !this.readFull) {
          await this.idle(seen, wakes);
          if (this.untilCheckpointDue() === 0) await this.saveCheckpoint(false);
          await this.gather(seen);
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
    await store.sequence({ ownOnly: true, onPlaced: this.placedHere });
    await store.waitForAppend(wait, this.abort.signal, seen);
  }

  /** After an append of this process, waits `placeBatchMs` for the commits that follow it. */
  private async gather(seen: number): Promise<void> {
    if (this.placeBatchMs > 0 && this.options.store.appendCount !== seen) {
      await pause(this.placeBatchMs, this.abort.signal);
    }
  }

  /**
   * Holding the lease with nothing to do: waits for an append here, a wake-up notice, or `idleMs`
   * (less when an unsaved position falls due: a relay never sits idle on one for long).
   */
  private async idle(seen: number, wakes: number): Promise<void> {
    if (this.wakes !== wakes) return;
    const ended = new AbortController();
    const stop = (): void => ended.abort();
    this.abort.signal.addEventListener('abort', stop);
    this.endWait = stop;
    try {
      await this.options.store.waitForAppend(
        Math.min(this.idleMs, this.untilCheckpointDue()),
        ended.signal,
        seen,
      );
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
