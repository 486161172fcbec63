import type { Consumer, Delivery, EventBus, EventData, EventStore } from '@keel/core';
import { isEvent } from '@keel/core';
import type { TurnCancelled, TurnCompleted, TurnFailed, UsageRecorded, UserMessageAdded } from '@keel/events';
import { CONVERSATION_CATEGORY, turnIdOf } from '@keel/events';
import { budgetMonthOf } from './budget-month.js';
import type { TurnBudgets } from './turn-budgets.js';

/** The events that end a turn: its cost is final then. */
const TURN_ENDS = new Set(['TurnCompleted', 'TurnFailed', 'TurnCancelled']);

/** True for an event that ends a turn. */
const isTurnEnd = (event: EventData): event is TurnCompleted | TurnFailed | TurnCancelled =>
  TURN_ENDS.has(event.type);

/** A turn's cost as its conversation recorded it. */
export interface TurnCost {
  /** The submit time of the turn's message (names the budget month), if found. */
  submittedAt?: string;
  /** Sum of the turn's UsageRecorded costs; an unpriced step (costUsd null) counts 0. */
  costUsd: number;
  /** Model steps recorded (0: the turn ended before any model output). */
  steps: number;
  /** Steps whose cost was null (model price unknown). */
  unpricedSteps: number;
}

/** Reads a turn's submit time and cost from its conversation's events. */
export const turnCostOf = (
  events: ReadonlyArray<{ type: string; data: unknown }>,
  turnId: string,
): TurnCost => {
  const cost: TurnCost = { costUsd: 0, steps: 0, unpricedSteps: 0 };
  for (const event of events) {
    if (turnIdOf(event) !== turnId) continue;
    if (isEvent<UserMessageAdded>(event, 'UserMessageAdded')) cost.submittedAt = event.data.at;
    if (!isEvent<UsageRecorded>(event, 'UsageRecorded')) continue;
    const usd = event.data.costUsd;
    cost.steps++;
    if (usd === null) cost.unpricedSteps++;
    else cost.costUsd += usd;
  }
  return cost;
};

/** The budget entry of an auto title call (`UsageRecorded` step 0, after its turn ended). */
export const titleCallId = (turnId: string): string => `${turnId}:title`;

/**
 * Settles turns against their month's budget: a durable consumer of the conversation streams
 * that, when a turn ends (completed, failed or cancelled), sums its recorded costs and settles
 * them (a turn without any model step is released instead). Settling is idempotent in the
 * decider, so a redelivered end event changes nothing.
 */
export class BudgetSettlement {
  private consumer: Consumer | undefined;

  constructor(
    private readonly store: EventStore,
    private readonly bus: EventBus,
    private readonly budgets: TurnBudgets,
  ) {}

  async start(): Promise<void> {
    this.consumer = await this.bus.consume(
      {
        name: 'agent-budget-settlement',
        filter: { category: CONVERSATION_CATEGORY },
        // Settling twice is a no-op in the decider; most events are skipped without any read.
        idempotency: 'none',
        maxInFlight: 16,
      },
      (delivery) => this.onEvent(delivery),
    );
  }

  async stop(): Promise<void> {
    await this.consumer?.stop();
    this.consumer = undefined;
  }

  private async onEvent({ event }: Delivery): Promise<void> {
    if (isEvent<UsageRecorded>(event, 'UsageRecorded') && event.data.step === 0) {
      await this.settleTitleCall(event);
      return;
    }
    if (!isTurnEnd(event)) return;
    const { turnId, at } = event.data;
    const events = await this.store.read(event.tenantId, event.streamName, { toVersion: event.version });
    const cost = turnCostOf(events, turnId);
    const month = budgetMonthOf(cost.submittedAt ?? at);
    const metadata = {
      ...(event.metadata.correlationId ? { correlationId: event.metadata.correlationId } : {}),
      causationId: event.eventId,
    };
    if (cost.steps === 0) {
      await this.budgets.release(event.tenantId, month, { turnId, reason: 'no_usage', at }, metadata);
      return;
    }
    await this.budgets.settle(
      event.tenantId,
      month,
      { turnId, costUsd: cost.costUsd, unpricedSteps: cost.unpricedSteps, at },
      metadata,
    );
  }

  /**
   * An agent's auto title call (API `autoTitle`) is recorded after its turn ended, so the turn's
   * settlement does not see it: it is settled on its own (no reservation; the decider records a
   * cost once per id), in the month of the call.
   */
  private async settleTitleCall(event: Delivery['event'] & UsageRecorded): Promise<void> {
    const { turnId, costUsd, at } = event.data;
    const metadata = {
      ...(event.metadata.correlationId ? { correlationId: event.metadata.correlationId } : {}),
      causationId: event.eventId,
    };
    const call = {
      turnId: titleCallId(turnId),
      costUsd: costUsd ?? 0,
      unpricedSteps: costUsd === null ? 1 : 0,
      at,
    };
    await this.budgets.settle(event.tenantId, budgetMonthOf(at), call, metadata);
  }
}
