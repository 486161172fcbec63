import type { EventData, LogPort, RecordedEvent } from '@keel/core';
import { parseStreamName } from '@keel/core';
import type { Conversation, CurrentTurn } from '../conversation/conversation.state.js';
import type { AppendWatcher } from '../store/caching-command-handler.js';
import type { StepClaims } from './step-claims.js';
import { stepDueAfter } from './step-policy.js';

/** The commit a local step was prepared for was not made (refused, or failed): no model call. */
export class NotCommitted extends Error {
  constructor() {
    super('the commit that makes the step due was not made');
  }
}

/** A model step this process starts on its own commit of the step's trigger. */
export interface LocalStart {
  tenantId: string;
  streamName: string;
  /** The conversation the commit makes, at `version` (this run's own copy). */
  state: Conversation;
  version: number;
  turn: CurrentTurn;
  /** The trigger as decided (its metadata: the command's), before the store records it. */
  trigger: EventData;
  /** The recorded trigger once the commit is durable; rejects with NotCommitted if it is not made. */
  committed: Promise<RecordedEvent>;
}

/** How a local run ended: it ran (the step is recorded or the turn ended), or its commit was not made. */
export type LocalOutcome = 'ran' | 'not-committed';

/** What local starts run on. */
export interface LocalStepsDeps {
  claims: StepClaims;
  /** Runs the step: prepares it at once, calls the model once `committed` resolves, records it. */
  run(start: LocalStart): Promise<void>;
  /** Told of the trigger once committed, before its step streams (the turn's timings). */
  committed(trigger: RecordedEvent): void;
  /** Local runs at once; past it a commit leaves its step to the durable consumer. */
  capacity: number;
  logger: LogPort;
}

/** How long a finished run waits for its trigger's delivery to join it (the delivery may go elsewhere). */
const FORGET_AFTER_MS = 60_000;

const keyOf = (tenantId: string, streamName: string, version: number): string =>
  `${tenantId}\u0000${streamName}\u0000${version}`;

/**
 * The local start: when this process commits a step's trigger (a message that starts a turn, the
 * last tool result of a step), it runs that step itself, prepared while the append is in flight
 * and sent to the model once the append is durable, never before. The durable consumer stays the
 * safety net: this process's delivery of the trigger joins the run (acked when it ends, so a
 * crash mid-step redelivers it); another instance's delivery waits for the run's claim (released
 * when the step is recorded, lapsed if this process died) and then finds nothing due.
 */
export class LocalSteps {
  private readonly runs = new Map<string, Promise<LocalOutcome>>();
  private running = 0;
  private closed = false;

  constructor(private readonly deps: LocalStepsDeps) {}

  /** A watcher for one command's append on a conversation; undefined when this process starts no step now. */
  watcher(tenantId: string, streamName: string): AppendWatcher<Conversation> | undefined {
    if (this.closed || this.running >= this.deps.capacity) return undefined;
    let gate: { resolve(event: RecordedEvent): void; reject(error: Error): void } | undefined;
    let triggerVersion = 0;
    return {
      appending: (state, events, version) => {
        const due = stepDueAfter(events, state, version);
        if (!due) return;
        triggerVersion = due.triggerVersion;
        const committed = new Promise<RecordedEvent>((resolve, reject) => (gate = { resolve, reject }));
        // Unobserved until the run awaits it: a refusal before then is not an unhandled rejection.
        committed.catch(() => undefined);
        const { turn, trigger } = due;
        this.begin({ tenantId, streamName, state, version, turn, trigger, committed }, triggerVersion);
      },
      appended: (events) => {
        const trigger = events.find((e) => e.version === triggerVersion);
        if (!gate) return;
        if (!trigger) return gate.reject(new NotCommitted());
        this.deps.committed(trigger);
        gate.resolve(trigger);
      },
      refused: () => gate?.reject(new NotCommitted()),
    };
  }

  /**
   * The local run of the step `trigger` makes due, when this process started it: the trigger's
   * delivery awaits it instead of running the step (and is acked when it ends). Taken once.
   */
  joined(trigger: RecordedEvent): Promise<LocalOutcome> | undefined {
    const key = keyOf(trigger.tenantId, trigger.streamName, trigger.version);
    const run = this.runs.get(key);
    this.runs.delete(key);
    return run;
  }

  /** Starts no more local runs; resolves when those under way have ended. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.runs.values()]);
  }

  /** Claims the step (before the commit can be published), and runs it. */
  private begin(start: LocalStart, triggerVersion: number): void {
    const { tenantId, streamName, turn } = start;
    const conversationId = parseStreamName(streamName).id;
    const release = this.deps.claims.claim(tenantId, conversationId, turn.turnId, turn.step + 1);
    const key = keyOf(tenantId, streamName, triggerVersion);
    this.running++;
    const done = this.deps.run(start).then(
      (): LocalOutcome => 'ran',
      (error: unknown): LocalOutcome => {
        if (error instanceof NotCommitted) return 'not-committed';
        const log = { tenantId, streamName, turnId: turn.turnId, step: turn.step + 1, err: error };
        this.deps.logger.warn(log, 'local model step failed; its trigger is redelivered');
        throw error;
      },
    );
    this.runs.set(key, done);
    void done
      .catch(() => undefined)
      .finally(() => {
        release();
        this.running--;
        const forget = setTimeout(() => {
          if (this.runs.get(key) === done) this.runs.delete(key);
        }, FORGET_AFTER_MS);
        forget.unref();
      });
  }
}
