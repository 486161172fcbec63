import type { RecordedEvent } from '@keel/core';
import { parseStreamName } from '@keel/core';
import type { HookDefinition } from '@keel/events';
import { CONVERSATION_CATEGORY, DURABLE_EVENT_NAMES, RUN_CATEGORY } from '@keel/events';

/*
 * Hook delivery policy (API.md "Hooks"), pure: which hooks an event goes to, what a lane does
 * next after an attempt, and the body sent. The IO (lanes store, signed POST, data append) is in
 * hook-deliveries.ts.
 *
 * Order: each (hook, stream) pair is a lane with a cursor, the last version of the stream settled
 * for that hook (delivered, dead-lettered, or not matching). A lane only ever moves its cursor
 * forward past the first unsettled event, so a failing delivery holds the later events of that
 * conversation back (for that hook) until it succeeds or is dead-lettered: in order per
 * conversation, at least once (the cursor moves after the send; a crash between sends it again
 * under the same Idempotency-Key).
 */

/** The streams whose events hooks receive: conversations and team runs. */
const HOOKED_CATEGORIES: readonly string[] = [CONVERSATION_CATEGORY, RUN_CATEGORY];

/** The public name of a durable event hooks may receive, or undefined (not an API event, or a hook's own `data`). */
export const hookEventName = (event: Pick<RecordedEvent, 'type' | 'streamName'>): string | undefined => {
  if (!HOOKED_CATEGORIES.includes(parseStreamName(event.streamName).category)) return undefined;
  const name = Object.hasOwn(DURABLE_EVENT_NAMES, event.type) ? DURABLE_EVENT_NAMES[event.type] : undefined;
  return name === 'data' ? undefined : name;
};

/** The hooks that subscribe to the event's name (the agent filter is applied per lane, see `hookWants`). */
export const hooksFor = (
  event: Pick<RecordedEvent, 'type' | 'streamName'>,
  hooks: Readonly<Record<string, HookDefinition>>,
): HookDefinition[] => {
  const name = hookEventName(event);
  if (name === undefined) return [];
  return Object.values(hooks).filter((hook) => hook.events.includes(name));
};

/**
 * Whether `hook` receives `event`: it subscribes to its name and, when it names an agent, the
 * stream is a conversation of that agent (`agentId`: the conversation's; undefined for a run).
 */
export const hookWants = (
  hook: HookDefinition,
  event: Pick<RecordedEvent, 'type' | 'streamName'>,
  agentId: string | undefined,
): boolean => {
  const name = hookEventName(event);
  if (name === undefined || !hook.events.includes(name)) return false;
  return hook.agentId === undefined || hook.agentId === agentId;
};

/** The retry schedule: the waits between attempts; attempts in all = waits + 1. */
export interface RetrySchedule {
  backoffMs: readonly number[];
}

/** What a lane does after a failed attempt (`attempts`: failed attempts of this event so far, this one included). */
export type AfterFailure = { kind: 'retry'; retryAt: number } | { kind: 'dead-letter' };

export const afterFailure = (schedule: RetrySchedule, attempts: number, now: number): AfterFailure => {
  if (attempts > schedule.backoffMs.length) return { kind: 'dead-letter' };
  return { kind: 'retry', retryAt: now + (schedule.backoffMs[attempts - 1] ?? 0) };
};

/** `KEEL_HOOKS_BACKOFF_MS` as a schedule ("1000,5000" → two waits, three attempts). */
export const scheduleOf = (text: string): RetrySchedule => ({
  backoffMs: text.split(',').map((part) => Number(part.trim())),
});

/** The JSON body POSTed for one event (signed like a webhook call; the secret signs these exact bytes). */
export const hookBody = (hook: string, event: RecordedEvent): string => {
  const { category, id } = parseStreamName(event.streamName);
  return JSON.stringify({
    hook,
    eventId: event.eventId,
    event: hookEventName(event),
    tenantId: event.tenantId,
    ...(category === RUN_CATEGORY ? { runId: id } : { conversationId: id }),
    version: event.version,
    at: event.recordedAt,
    data: event.data,
  });
};

/** The `{ data }` of a hook's 2xx answer, when it is a JSON object with an object `data`. */
export const answerData = (body: unknown): Record<string, unknown> | undefined => {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const data = (body as Record<string, unknown>).data;
  return typeof data === 'object' && data !== null && !Array.isArray(data)
    ? (data as Record<string, unknown>)
    : undefined;
};

/**
 * Hook dead letters are the bus's, under the consumer `hooks`, the event's metadata naming the
 * hook (`hook`): listed at `/v1/hooks/{name}/failures` and `/v1/dead-letters`; an operator's
 * replay comes back to the `hooks` consumer, which sends it to that hook once more.
 */
export const HOOK_METADATA_KEY = 'hook';

/** The event as its dead letter keeps it: the hook named in its metadata. */
export const deadLetterEvent = (hook: string, event: RecordedEvent): RecordedEvent => ({
  ...event,
  metadata: { ...event.metadata, [HOOK_METADATA_KEY]: hook },
});

/** The hook a dead-lettered (or replayed) event was meant for. */
export const hookOfDeadLetter = (event: Pick<RecordedEvent, 'metadata'>): string | undefined => {
  const hook = event.metadata[HOOK_METADATA_KEY];
  return typeof hook === 'string' ? hook : undefined;
};
