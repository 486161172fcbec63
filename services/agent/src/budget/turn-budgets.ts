import type { EventMetadata, EventStore } from '@keel/core';
import { BudgetExceededError, streamName } from '@keel/core';
import { CONVERSATION_CATEGORY, turnIdOf } from '@keel/events';
import type { BudgetDirectory } from './budget-directory.js';
import { BudgetLog } from './budget-log.js';
import { budgetMonthOf } from './budget-month.js';
import type { BudgetCommand, MonthBudget } from './budget.decider.js';
import type { LogPort } from '@keel/core';

/** Settings of the turn budgets. */
export interface TurnBudgetsOptions {
  /** The floor of every turn's reservation in USD (KEEL_BUDGET_TURN_RESERVE_USD, default 0.05). */
  reserveUsd?: number;
  /** Appends tried before a crowded budget stream answers UNAVAILABLE (default 40). */
  maxAttempts?: number;
  /** A reservation older than this whose turn is in no conversation is reclaimed (default 60 s). */
  orphanAfterMs?: number;
  logger?: Pick<LogPort, 'warn'>;
  now?: () => number;
}

/** A turn about to be submitted. */
export interface TurnToAdmit {
  tenantId: string;
  conversationId: string;
  turnId: string;
  /** The submit's time, which the user message also carries: it names the budget month. */
  at: string;
  metadata?: EventMetadata;
}

/** The default reservation floor of a turn, in USD. */
export const DEFAULT_TURN_RESERVE_USD = 0.05;

/**
 * Tenants' monthly budgets, held under concurrency. A turn is admitted by appending its
 * reservation to the month's budget stream with the version it decided on (BudgetLog): the
 * admissions waiting in this process go in one commit, decided in order; of racing processes
 * exactly one append wins, the others read what it appended and decide again, so no turn is
 * admitted on a stale view of spent + reserved.
 */
export class TurnBudgets {
  private readonly log: BudgetLog;
  private readonly reserveUsd: number;
  private readonly orphanAfterMs: number;
  private readonly now: () => number;
  /** Per month: the orphan reclaim pass in flight. */
  private readonly reclaiming = new Map<string, Promise<number>>();

  constructor(
    private readonly store: EventStore,
    private readonly directory: BudgetDirectory,
    private readonly options: TurnBudgetsOptions = {},
  ) {
    this.log = new BudgetLog(store, options.maxAttempts ? { maxAttempts: options.maxAttempts } : {});
    this.reserveUsd = options.reserveUsd ?? DEFAULT_TURN_RESERVE_USD;
    this.orphanAfterMs = options.orphanAfterMs ?? 60_000;
    this.now = options.now ?? Date.now;
  }

  /**
   * Runs `submit` (the append of the user message) under the tenant's budget: without a budget it
   * just runs; with one, the turn is reserved first (BudgetExceededError when the month is used
   * up, and then nothing is submitted), and a submit that fails gives the reservation back.
   */
  async admit<T>(turn: TurnToAdmit, submit: () => Promise<T>): Promise<T> {
    const monthlyUsd = await this.directory.monthlyUsdOf(turn.tenantId);
    if (monthlyUsd === undefined) return submit();
    const month = budgetMonthOf(turn.at);
    await this.reserve(turn, month, monthlyUsd);
    try {
      return await submit();
    } catch (error) {
      await this.command(
        turn.tenantId,
        month,
        { type: 'ReleaseTurn', turnId: turn.turnId, reason: 'submit_refused', at: turn.at },
        turn.metadata,
      ).catch((releaseError: unknown) =>
        // Left held, the reservation is reclaimed as an orphan once the budget runs short.
        this.options.logger?.warn(
          { tenantId: turn.tenantId, turnId: turn.turnId, err: releaseError },
          'a refused submit could not release its budget reservation',
        ),
      );
      throw error;
    }
  }

  /** Records a finished turn's cost against its month (a no-op when already settled). */
  settle(
    tenantId: string,
    month: string,
    turn: { turnId: string; costUsd: number; unpricedSteps: number; at: string },
    metadata?: EventMetadata,
  ) {
    return this.command(tenantId, month, { type: 'SettleTurn', ...turn }, metadata);
  }

  /** Gives a turn's reservation back without cost (a no-op when it holds none). */
  release(
    tenantId: string,
    month: string,
    turn: { turnId: string; reason: 'no_usage' | 'orphaned'; at: string },
    metadata?: EventMetadata,
  ) {
    return this.command(tenantId, month, { type: 'ReleaseTurn', ...turn }, metadata);
  }

  /** The month's budget state (spent, reserved), for reads and tests. */
  month(tenantId: string, month: string): Promise<MonthBudget> {
    return this.log.load(tenantId, month);
  }

  private async reserve(turn: TurnToAdmit, month: string, monthlyUsd: number): Promise<void> {
    const command: BudgetCommand = {
      type: 'ReserveTurn',
      turnId: turn.turnId,
      conversationId: turn.conversationId,
      monthlyUsd,
      reserveUsd: this.reserveUsd,
      month,
      at: turn.at,
    };
    try {
      await this.command(turn.tenantId, month, command, turn.metadata);
    } catch (error) {
      if (!(error instanceof BudgetExceededError)) throw error;
      // Full: reservations of submits whose process died before submitting or releasing would
      // hold the budget forever; give those back and decide once more.
      if ((await this.reclaimOnce(turn.tenantId, month)) === 0) throw error;
      await this.command(turn.tenantId, month, command, turn.metadata);
    }
  }

  /**
   * The month's orphans reclaimed by one pass at a time: the turns refused together (a full month
   * refuses every waiting turn) share the pass in flight instead of each reading every reservation.
   */
  private reclaimOnce(tenantId: string, month: string): Promise<number> {
    const k = `${tenantId}/${month}`;
    let pass = this.reclaiming.get(k);
    if (!pass) {
      pass = this.reclaimOrphans(tenantId, month).finally(() => this.reclaiming.delete(k));
      this.reclaiming.set(k, pass);
    }
    return pass;
  }

  /** Releases reservations older than `orphanAfterMs` whose turn no conversation has; returns how many. */
  private async reclaimOrphans(tenantId: string, month: string): Promise<number> {
    const state = await this.log.load(tenantId, month);
    const cutoff = this.now() - this.orphanAfterMs;
    let reclaimed = 0;
    for (const [turnId, held] of Object.entries(state.reserved)) {
      if (Date.parse(held.at) > cutoff) continue;
      const events = await this.store.read(tenantId, streamName(CONVERSATION_CATEGORY, held.conversationId));
      if (events.some((e) => turnIdOf(e) === turnId)) continue;
      await this.release(tenantId, month, {
        turnId,
        reason: 'orphaned',
        at: new Date(this.now()).toISOString(),
      });
      reclaimed++;
    }
    return reclaimed;
  }

  private command(tenantId: string, month: string, command: BudgetCommand, metadata?: EventMetadata) {
    return this.log.handle(tenantId, month, command, metadata);
  }
}
