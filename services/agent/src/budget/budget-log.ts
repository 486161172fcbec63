import type { EventMetadata, EventStore } from '@keel/core';
import { CommandHandler, ConcurrencyError, UnavailableError, foldRecorded, sleep } from '@keel/core';
import type { BudgetEvent } from '@keel/events';
import { budgetStream } from './budget-month.js';
import type { BudgetCommand, MonthBudget } from './budget.decider.js';
import { budgetDecider } from './budget.decider.js';

/** A month's budget as this process last saw it: the state folded up to `version`. */
interface KnownMonth {
  state: MonthBudget;
  version: number;
  /** The version of the last snapshot this process knows of. */
  snapshotVersion: number;
}

/** Settings of the budget log. */
export interface BudgetLogOptions {
  /** Appends tried before a crowded budget stream answers UNAVAILABLE (default 40). */
  maxAttempts?: number;
  /** Save a snapshot every this many events (default 50); a cold process starts from it. */
  snapshotEvery?: number;
  /** Months kept in memory (default 1000; the least recently used is dropped first). */
  maxCachedMonths?: number;
  /** Commands of one month decided and appended together at most (default 100). */
  maxBatch?: number;
}

/** A command waiting for its month's next commit, and whoever waits for its outcome. */
interface Waiting {
  command: BudgetCommand;
  metadata: EventMetadata | undefined;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** One command's decision within a commit: its events, or why it was refused. */
type Decision = { events: BudgetEvent[] } | { refused: unknown };

const SNAPSHOT_NAME = 'budget-v1';

/**
 * Decides budget commands against the month streams with optimistic concurrency, one commit at a
 * time per month in this process.
 *
 * Invariant: no outcome is answered on a state that was not current. A commit decides its
 * commands in order on the month state this process remembers (no read) and appends what they
 * decided with the version that state was folded to: the append succeeding proves that state was
 * the stream's head, for every command of the commit (admitted, refused or a no-op alike). A lost
 * append reads only the events appended since, and decides the whole commit again. A commit that
 * decided nothing to append proves nothing, so it reads the events since first (one point read,
 * usually empty) and decides again when there were any.
 *
 * Commands arriving while a month's commit is in flight wait and go together in the next one, so
 * N concurrent turns of a tenant cost about one append per commit round trip instead of N racing
 * read + append pairs, each loser retrying alone.
 */
export class BudgetLog {
  private readonly cold: CommandHandler<MonthBudget, BudgetCommand, BudgetEvent>;
  private readonly known = new Map<string, KnownMonth>();
  /** Per month: the commands waiting for the next commit (the entry exists while one runs). */
  private readonly queues = new Map<string, Waiting[]>();
  private readonly maxAttempts: number;
  private readonly snapshotEvery: number;
  private readonly maxCachedMonths: number;
  private readonly maxBatch: number;

  constructor(
    private readonly store: EventStore,
    options: BudgetLogOptions = {},
  ) {
    this.snapshotEvery = options.snapshotEvery ?? 50;
    this.cold = new CommandHandler(store, budgetDecider, {
      snapshot: { name: SNAPSHOT_NAME, every: this.snapshotEvery },
    });
    this.maxAttempts = options.maxAttempts ?? 40;
    this.maxCachedMonths = options.maxCachedMonths ?? 1000;
    this.maxBatch = options.maxBatch ?? 100;
  }

  /** The month's current state (reads what was appended since this process last looked). */
  async load(tenantId: string, month: string): Promise<MonthBudget> {
    return (await this.caughtUp(tenantId, month, await this.remembered(tenantId, month))).known.state;
  }

  /**
   * Decides and appends one command, in the month's next commit; a decision of no events writes
   * nothing. Rejects with the decider's refusal (e.g. BudgetExceededError) for this command alone.
   */
  handle(tenantId: string, month: string, command: BudgetCommand, metadata?: EventMetadata): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const waiting: Waiting = { command, metadata, resolve, reject };
      const k = key(tenantId, month);
      const queue = this.queues.get(k);
      if (queue) return void queue.push(waiting);
      this.queues.set(k, [waiting]);
      void this.drain(tenantId, month);
    });
  }

  /** Commits the month's waiting commands, a batch at a time, until none wait. */
  private async drain(tenantId: string, month: string): Promise<void> {
    const k = key(tenantId, month);
    for (;;) {
      const queue = this.queues.get(k)!;
      if (queue.length === 0) return void this.queues.delete(k);
      const batch = queue.splice(0, this.maxBatch);
      try {
        await this.commit(tenantId, month, batch);
      } catch (error) {
        for (const waiting of batch) waiting.reject(error);
      }
    }
  }

  /** Decides `batch` in order and appends its events in one commit; answers each command. */
  private async commit(tenantId: string, month: string, batch: Waiting[]): Promise<void> {
    let known = await this.remembered(tenantId, month);
    for (let attempt = 1; ; attempt++) {
      known = this.laterOf(tenantId, month, known);
      const { decisions, state } = decideInOrder(batch, known.state);
      const events = batch.flatMap((waiting, i) => {
        const decision = decisions[i]!;
        if (!('events' in decision)) return [];
        const { metadata } = waiting;
        return decision.events.map((e) => ({ ...e, ...(metadata ? { metadata } : {}) }));
      });
      if (events.length === 0) {
        // Nothing to append proves nothing: answer only on a state read to the stream's head.
        const fresh = await this.caughtUp(tenantId, month, known);
        known = fresh.known;
        if (!fresh.newer) return answer(batch, decisions);
        if (attempt >= this.maxAttempts) throw tooBusy();
        continue;
      }
      try {
        const appended = await this.store.append(tenantId, budgetStream(month), events, {
          expectedVersion: known.version,
        });
        // The state the decisions left is the appended events folded (what was decided was appended).
        const after = { ...known, state, version: appended.nextExpectedVersion };
        this.remember(tenantId, month, after);
        this.maybeSnapshot(tenantId, month, after);
        return answer(batch, decisions);
      } catch (error) {
        if (!(error instanceof ConcurrencyError)) throw error;
        if (attempt >= this.maxAttempts) throw tooBusy(error);
        // Another process appended: its events are read, and the batch decided again on them.
        await sleep(Math.random() * Math.min(50, 2 * attempt));
        known = (await this.caughtUp(tenantId, month, known)).known;
      }
    }
  }

  /** The month as this process remembers it (loaded from its snapshot and log the first time). */
  private async remembered(tenantId: string, month: string): Promise<KnownMonth> {
    const known = this.known.get(key(tenantId, month));
    if (known) return known;
    const loaded = await this.cold.load(tenantId, budgetStream(month));
    const cold = {
      state: loaded.state,
      version: loaded.version,
      snapshotVersion: loaded.version - loaded.eventsFolded,
    };
    this.remember(tenantId, month, cold);
    return cold;
  }

  /** `known`, or what this process remembers of the month if that is later (a concurrent `load`). */
  private laterOf(tenantId: string, month: string, known: KnownMonth): KnownMonth {
    const remembered = this.known.get(key(tenantId, month));
    return remembered && remembered.version > known.version ? remembered : known;
  }

  /** `known` with the events appended after it folded in, and whether there were any. */
  private async caughtUp(
    tenantId: string,
    month: string,
    known: KnownMonth,
  ): Promise<{ known: KnownMonth; newer: boolean }> {
    const newer = await this.store.read(tenantId, budgetStream(month), { fromVersion: known.version + 1 });
    if (newer.length === 0) return { known, newer: false };
    const after = {
      ...known,
      state: foldRecorded(budgetDecider, newer, known.state),
      version: newer[newer.length - 1]!.version,
    };
    this.remember(tenantId, month, after);
    return { known: after, newer: true };
  }

  /** Keeps `known` unless this process already remembers a later version of the month. */
  private remember(tenantId: string, month: string, known: KnownMonth): void {
    const k = key(tenantId, month);
    const current = this.known.get(k);
    if (current && current.version > known.version) return;
    this.known.delete(k);
    this.known.set(k, known);
    if (this.known.size > this.maxCachedMonths) this.known.delete(this.known.keys().next().value!);
  }

  /** Saves a snapshot in the background every `snapshotEvery` events. */
  private maybeSnapshot(tenantId: string, month: string, known: KnownMonth): void {
    if (known.version - known.snapshotVersion < this.snapshotEvery) return;
    // Counted as taken now, so the commits while it is written do not take it again.
    this.remember(tenantId, month, { ...known, snapshotVersion: known.version });
    // A snapshot is a cache for cold starts: failing to write one must not fail the command.
    void this.store.snapshots
      .save(tenantId, budgetStream(month), {
        name: SNAPSHOT_NAME,
        version: known.version,
        state: known.state,
      })
      .catch(() => undefined);
  }
}

/**
 * Each command decided on the state the ones before it in the batch leave: an admitted turn counts
 * in the next one's spent + reserved, exactly as if they had been appended one by one.
 */
const decideInOrder = (
  batch: readonly Waiting[],
  from: MonthBudget,
): { decisions: Decision[]; state: MonthBudget } => {
  let state = from;
  const decisions = batch.map(({ command }): Decision => {
    try {
      const events = budgetDecider.decide(command, state);
      state = events.reduce(budgetDecider.evolve, state);
      return { events };
    } catch (refused) {
      return { refused };
    }
  });
  return { decisions, state };
};

/** Answers each waiting command with its decision: done, or its refusal. */
const answer = (batch: readonly Waiting[], decisions: readonly Decision[]): void => {
  batch.forEach((waiting, i) => {
    const decision = decisions[i]!;
    if ('refused' in decision) waiting.reject(decision.refused);
    else waiting.resolve();
  });
};

/** A month whose stream other processes keep moving faster than this one can decide on it. */
const tooBusy = (cause?: unknown): UnavailableError =>
  new UnavailableError('the budget is too busy to decide now, retry later', cause ? { cause } : {});

const key = (tenantId: string, month: string): string => `${tenantId}/${month}`;
