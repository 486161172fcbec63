import type { RecordedEvent } from '@keel/core';
import type { CallCaller } from '../execution/types.js';

/** A conversation event that asks for a tool call to run now. */
export interface CallTrigger {
  toolCallId: string;
  turnId: string;
  /** True when the trigger is a user's approval of the call. */
  approvalGranted: boolean;
}

/** A `ToolCallRequested` event, checked. */
export interface RequestedCall {
  turnId: string;
  toolCallId: string;
  name: string;
  args: unknown;
  approvalRequired: boolean;
  /** True for a client tool's call: the connected client runs it, never this service. */
  client: boolean;
  /** The event's version in the conversation stream. */
  version: number;
  /** The turn's end user and the conversation's metadata, sent on with webhook and MCP calls. */
  caller?: CallCaller;
}

/** The event's `user` and `metadata`, when well-formed (events before them have neither). */
const callerOf = (data: Record<string, unknown>): CallCaller | undefined => {
  const user = record(data.user);
  const id = text(user?.id);
  const role = text(user?.role);
  const metadata = record(data.metadata);
  const strings =
    metadata && Object.values(metadata).every((v) => typeof v === 'string')
      ? (metadata as Record<string, string>)
      : undefined;
  if (!id && !strings) return undefined;
  return {
    ...(id ? { user: { id, ...(role ? { role } : {}) } } : {}),
    ...(strings ? { metadata: strings } : {}),
  };
};

/** Why a requested call is not run after all. */
export type SkipReason = 'turn-cancelled' | 'result-recorded' | 'client-call';

const record = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;

const text = (value: unknown): string | undefined =>
  typeof value === 'string' && value !== '' ? value : undefined;

/**
 * The trigger an event carries: a `ToolCallRequested` that needs no approval, or an
 * `ApprovalDecided` that approves. Everything else (a call waiting for approval, a denial — the
 * agent records that one itself — and every other event) triggers nothing.
 */
export const triggerOf = (event: RecordedEvent): CallTrigger | undefined => {
  const data = record(event.data);
  const toolCallId = text(data?.toolCallId);
  const turnId = text(data?.turnId);
  if (!data || !toolCallId || !turnId) return undefined;
  // A sub-agent call runs a child conversation: the agent service runs it, not this one.
  if (event.type === 'ToolCallRequested' && typeof data.childConversationId === 'string') return undefined;
  // A client tool's call is the connected client's to run (its approval is checked on the request).
  if (event.type === 'ToolCallRequested' && data.approvalRequired === false && data.executor !== 'client') {
    return { toolCallId, turnId, approvalGranted: false };
  }
  if (event.type === 'ApprovalDecided' && data.decision === 'approve') {
    return { toolCallId, turnId, approvalGranted: true };
  }
  return undefined;
};

/**
 * Whether a delivery of a trigger may find its call's outcome already recorded, so the log is
 * worth asking before anything else: a redelivery, an operator's replay, or a trigger recorded a
 * minute ago or more (a duplicate the relay published again after the bus's deduplication window,
 * or a durable catching up). A first delivery of a fresh trigger is the first time this consumer
 * sees it; should it still be a duplicate, the ledger and the `no_stream` append keep the call from
 * running or being recorded twice.
 */
export const outcomeMayBeRecorded = (
  delivery: { deliveryCount: number; replayOf?: string; event: Pick<RecordedEvent, 'recordedAt'> },
  now: number = Date.now(),
): boolean => {
  if (delivery.deliveryCount > 1 || delivery.replayOf !== undefined) return true;
  const recordedAt = Date.parse(delivery.event.recordedAt);
  return !Number.isFinite(recordedAt) || now - recordedAt >= FRESH_TRIGGER_MS;
};

/** How old a trigger may be and still count as delivered for the first time (see outcomeMayBeRecorded). */
const FRESH_TRIGGER_MS = 60_000;

/** The event as a requested call, when it is a well-formed `ToolCallRequested`. */
export const requestedCall = (event: RecordedEvent): RequestedCall | undefined => {
  if (event.type !== 'ToolCallRequested') return undefined;
  const data = record(event.data);
  const toolCallId = text(data?.toolCallId);
  const turnId = text(data?.turnId);
  const name = text(data?.name);
  if (!data || !toolCallId || !turnId || !name) return undefined;
  return {
    turnId,
    toolCallId,
    name,
    args: data.args,
    approvalRequired: data.approvalRequired === true,
    client: data.executor === 'client',
    version: event.version,
    ...(callerOf(data) ? { caller: callerOf(data)! } : {}),
  };
};

/** The `ToolCallRequested` of `toolCallId` among a conversation's events. */
export const findRequest = (
  events: readonly RecordedEvent[],
  toolCallId: string,
): RequestedCall | undefined => {
  for (const event of events) {
    const call = requestedCall(event);
    if (call?.toolCallId === toolCallId) return call;
  }
  return undefined;
};

/**
 * Whether the events after a request make running it pointless: its turn was cancelled (the
 * conversation no longer waits for it), or the conversation already holds its result.
 */
export const skipReason = (
  later: readonly RecordedEvent[],
  call: Pick<RequestedCall, 'turnId' | 'toolCallId' | 'version'> & { client?: boolean },
): SkipReason | undefined => {
  if (call.client) return 'client-call';
  for (const event of later) {
    if (event.version <= call.version) continue;
    const data = record(event.data);
    if (event.type === 'TurnCancelled' && data?.turnId === call.turnId) return 'turn-cancelled';
    if (event.type === 'ToolCallCompleted' && data?.toolCallId === call.toolCallId) return 'result-recorded';
  }
  return undefined;
};
