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
}

const SNAPSHOT_NAME = 'budget-v1';

/**
 * Decides budget commands against the month streams with optimistic concurrency. Each month's
 * folded state stays in memory with its version, so a decision reads only the events appended
 * since (one point read when there are none) instead of reloading the stream: on FerretDB every
 * extra read is a scan. The cache never decides alone: the append carries the version the
 * decision was made at, and a stale cache loses the append, reads the newer events and decides
 * again, after a short random pause, a bounded number of times.
 */
export class BudgetLog {
  private readonly cold: CommandHandler<MonthBudget, BudgetCommand, BudgetEvent>;
  private readonly known = new Map<string, KnownMonth>();
  private readonly maxAttempts: number;
  private readonly snapshotEvery: number;
  private readonly maxCachedMonths: number;

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
  }

  /** The month's current state (reads what was appended since this process last looked). */
  async load(tenantId: string, month: string): Promise<MonthBudget> {
    return (await this.current(tenantId, month)).state;
  }

  /** Decides and appends one command; a decision of no events writes nothing. */
  async handle(
    tenantId: string,
    month: string,
    command: BudgetCommand,
    metadata?: EventMetadata,
  ): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const known = await this.current(tenantId, month);
      const decided = budgetDecider.decide(command, known.state);
      if (decided.length === 0) return;
      try {
        const appended = await this.store.append(
          tenantId,
          budgetStream(month),
          decided.map((e) => ({ ...e, ...(metadata ? { metadata } : {}) })),
          { expectedVersion: known.version },
        );
        const state = foldRecorded(budgetDecider, appended.events, known.state);
        const after = { ...known, state, version: appended.nextExpectedVersion };
        this.remember(tenantId, month, after);
        await this.maybeSnapshot(tenantId, month, after);
        return;
      } catch (error) {
        if (!(error instanceof ConcurrencyError)) throw error;
        if (attempt >= this.maxAttempts) {
          throw new UnavailableError('the budget is too busy to decide now, retry later', { cause: error });
        }
        await sleep(Math.random() * Math.min(50, 2 * attempt));
      }
    }
  }

  private async current(tenantId: string, month: string): Promise<KnownMonth> {
    let known = this.known.get(key(tenantId, month));
    if (!known) {
      const loaded = await this.cold.load(tenantId, budgetStream(month));
      known = {
        state: loaded.state,
        version: loaded.version,
        snapshotVersion: loaded.version - loaded.eventsFolded,
      };
    } else {
      const newer = await this.store.read(tenantId, budgetStream(month), { fromVersion: known.version + 1 });
      if (newer.length > 0) {
        known = {
          ...known,
          state: foldRecorded(budgetDecider, newer, known.state),
          version: newer[newer.length - 1]!.version,
        };
      }
    }
    this.remember(tenantId, month, known);
    return known;
  }

  private remember(tenantId: string, month: string, known: KnownMonth): void {
    const k = key(tenantId, month);
    this.known.delete(k);
    this.known.set(k, known);
    if (this.known.size > this.maxCachedMonths) this.known.delete(this.known.keys().next().value!);
  }

  private async maybeSnapshot(tenantId: string, month: string, known: KnownMonth): Promise<void> {
    if (known.version - known.snapshotVersion < this.snapshotEvery) return;
    // A snapshot is a cache for cold starts: failing to write one must not fail the command.
    await this.store.snapshots
      .save(tenantId, budgetStream(month), {
        name: SNAPSHOT_NAME,
        version: known.version,
        state: known.state,
      })
      .then(() => this.remember(tenantId, month, { ...known, snapshotVersion: known.version }))
      .catch(() => undefined);
  }
}

const key = (tenantId: string, month: string): string => `${tenantId}/${month}`;
