import type { RecordedEvent } from '@keel/core';
import { isEvent } from '@keel/core';
import type { TurnCancelled, TurnCompleted, TurnFailed, TurnStarted } from '@keel/events';

/** What the turn worker reports (the runtime's `ServiceMetrics` implements it; tests may record it). */
export interface TurnMetrics {
  turnStarted(): void;
  /** A turn ended; `seconds` from its start when this instance saw it start. */
  turnFinished(outcome: 'completed' | 'failed' | 'cancelled', seconds: number | undefined): void;
  /** From the turn's start to the first text token of the turn. */
  firstToken(model: string, seconds: number): void;
  modelCall(model: string, outcome: 'ok' | 'error' | 'cancelled', seconds: number): void;
  /** A recorded model call's tokens and cost (null: unpriced). */
  modelUsage(
    model: string,
    usage: {
      promptTokens: number;
      completionTokens: number;
      cacheReadTokens?: number;
      cacheWriteTokens?: number;
    },
    costUsd: number | null,
  ): void;
}

type TurnEnd = TurnCompleted | TurnFailed | TurnCancelled;

const TERMINAL: Readonly<Record<TurnEnd['type'], 'completed' | 'failed' | 'cancelled'>> = {
  TurnCompleted: 'completed',
  TurnFailed: 'failed',
  TurnCancelled: 'cancelled',
};

/** Narrows an event to a turn's end (completed, failed or cancelled). */
const isTurnEnd = (event: RecordedEvent): event is RecordedEvent & TurnEnd =>
  Object.hasOwn(TERMINAL, event.type);

/** An event's `at` in ms, NaN when it has none that parses. */
const instantOf = (at: unknown): number => (typeof at === 'string' ? Date.parse(at) : Number.NaN);

/** Turns remembered at once (their start instant); the oldest are forgotten past it. */
const MAX_REMEMBERED = 10_000;

/**
 * The turn lifecycle as one instance sees it in the conversation events: counts starts and
 * ends, and times each turn and its first token from the `at` of its TurnStarted. An instance
 * that did not see a turn start (another instance took that event) counts its end untimed.
 */
export class TurnTimings {
  readonly #started = new Map<string, { at: number; firstToken: boolean }>();

  constructor(private readonly metrics: TurnMetrics) {}

  /** Reads one conversation event; call it once per event (first delivery only). */
  observe(event: RecordedEvent): void {
    if (isEvent<TurnStarted>(event, 'TurnStarted')) this.started(event.data);
    else if (isTurnEnd(event)) this.ended(TERMINAL[event.type], event.data);
  }

  private started({ turnId, at }: TurnStarted['data']): void {
    if (typeof turnId !== 'string') return;
    this.metrics.turnStarted();
    const instant = instantOf(at);
    if (Number.isNaN(instant)) return;
    this.#started.set(turnId, { at: instant, firstToken: false });
    if (this.#started.size > MAX_REMEMBERED) {
      const oldest = this.#started.keys().next().value;
      if (oldest !== undefined) this.#started.delete(oldest);
    }
  }

  private ended(outcome: 'completed' | 'failed' | 'cancelled', { turnId, at }: TurnEnd['data']): void {
    if (typeof turnId !== 'string') return;
    const started = this.#started.get(turnId);
    this.#started.delete(turnId);
    const instant = instantOf(at);
    const seconds =
      started && !Number.isNaN(instant) ? Math.max(0, (instant - started.at) / 1000) : undefined;
    this.metrics.turnFinished(outcome, seconds);
  }

  /** A text token of the turn was streamed: the first one (of a turn seen starting) is timed. */
  token(turnId: string, model: string, now: number = Date.now()): void {
    const started = this.#started.get(turnId);
    if (!started || started.firstToken) return;
    started.firstToken = true;
    this.metrics.firstToken(model, Math.max(0, (now - started.at) / 1000));
  }
}

/** Reports nothing: the worker without metrics. */
export const NO_TURN_METRICS: TurnMetrics = {
  turnStarted: () => undefined,
  turnFinished: () => undefined,
  firstToken: () => undefined,
  modelCall: () => undefined,
  modelUsage: () => undefined,
};
