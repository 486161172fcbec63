import type { EventMetadata, EventStore, RecordedEvent } from '@keel/core';
import { ConcurrencyError, EventTooLargeError, streamName } from '@keel/core';
import type { ToolCallExecuted } from '@keel/events';
import { TOOL_CALL_CATEGORY } from '@keel/events';
import type { ToolOutcome } from '../execution/index.js';
import type { RequestedCall } from './call-trigger.js';

/** What `recordToolCallExecuted` appends, and where it comes from. */
export interface ExecutedCall {
  /** The event that made the call run (its request, or its approval). */
  trigger: RecordedEvent;
  conversationId: string;
  call: Pick<RequestedCall, 'toolCallId' | 'turnId' | 'name'>;
  outcome: ToolOutcome;
  at: Date;
}

/**
 * Appends the call's `ToolCallExecuted` as the only event of `toolcall-<toolCallId>`
 * (`no_stream`): `recorded` when this append wrote it, `already-recorded` when another instance
 * (or an earlier delivery) did. A result too large for the log is recorded as a tool error, so
 * the turn still goes on.
 */
export const recordToolCallExecuted = async (
  store: EventStore,
  executed: ExecutedCall,
): Promise<'recorded' | 'recorded-too-large' | 'already-recorded'> => {
  const { trigger, call, outcome } = executed;
  const base = {
    toolCallId: call.toolCallId,
    conversationId: executed.conversationId,
    turnId: call.turnId,
    name: call.name,
    attempts: outcome.attempts,
    durationMs: outcome.durationMs,
    at: executed.at.toISOString(),
  };
  const append = (data: ToolCallExecuted['data']) =>
    store.append(
      trigger.tenantId,
      streamName(TOOL_CALL_CATEGORY, call.toolCallId),
      [{ type: 'ToolCallExecuted', data, metadata: metadataOf(trigger) }],
      { expectedVersion: 'no_stream' },
    );
  try {
    try {
      await append(
        outcome.ok
          ? { ...base, ok: true, result: outcome.result }
          : { ...base, ok: false, error: outcome.error },
      );
      return 'recorded';
    } catch (error) {
      if (!(error instanceof EventTooLargeError)) throw error;
      await append({
        ...base,
        ok: false,
        error: { code: 'result_too_large', message: `the result of ${call.name} is too large to record` },
      });
      return 'recorded-too-large';
    }
  } catch (error) {
    if (error instanceof ConcurrencyError) return 'already-recorded';
    throw error;
  }
};

/** The trigger's correlation id and actor travel on to the outcome; the trigger is its cause. */
export const metadataOf = (trigger: RecordedEvent): EventMetadata => {
  const { correlationId, actor } = trigger.metadata;
  return {
    ...(correlationId === undefined ? {} : { correlationId }),
    causationId: trigger.eventId,
    ...(actor === undefined ? {} : { actor }),
  };
};
