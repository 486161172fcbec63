import type { RecordedEvent } from '@keel/core';

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

const TERMINAL: Readonly<Record<string, 'completed' | 'failed' | 'cancelled'>> = {
  TurnCompleted: 'completed',
  TurnFailed: 'failed',
  TurnCancelled: 'cancelled',
};

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
    const data = event.data as { turnId?: unknown; at?: unknown };
    if (typeof data.turnId !== 'string') return;
    const at = typeof data.at === 'string' ? Date.parse(data.at) : Number.NaN;
    if (event.type === 'TurnStarted') {
      this.metrics.turnStarted();
      if (Number.isNaN(at)) return;
      this.#started.set(data.turnId, { at, firstToken: false });
      if (this.#started.size > MAX_REMEMBERED) {
        const oldest = this.#started.keys().next().value;
        if (oldest !== undefined) this.#started.delete(oldest);
      }
      return;
    }
    const outcome = TERMINAL[event.type];
    if (outcome === undefined) return;
    const started = this.#started.get(data.turnId);
    this.#started.delete(data.turnId);
    const seconds = started && !Number.isNaN(at) ? Math.max(0, (at - started.at) / 1000) : undefined;
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
