import type { RecordedEvent } from '@keel/core';
import { ValidationError } from '@keel/core';
import type { ConversationEvent, HookDataReceived } from '@keel/events';
import { runFrame } from '../runs/run-frames.js';

/** One SSE frame of a feed, the events feed or a turn feed (API.md "The turn stream (SSE)"). */
export interface FeedFrame {
  id: string;
  event: string;
  data: unknown;
}

type Durable = { [T in ConversationEvent['type']]: Extract<ConversationEvent, { type: T }> };

/** Builds a frame's data from a durable event's data, or skips the event (not part of the API). */
type DurableMapping = {
  [T in ConversationEvent['type']]: ((data: Durable[T]['data']) => [string, unknown]) | null;
};

/** A client call's `tool.call` fields: its executor, and its deadline once it may run (no approval pending). */
const clientCallOf = (d: {
  executor?: 'client';
  deadline?: string;
}): { executor?: 'client'; deadline?: string } =>
  d.executor === 'client' ? { executor: 'client', ...(d.deadline ? { deadline: d.deadline } : {}) } : {};

const DURABLE: DurableMapping = {
  ConversationCreated: null,
  UserMessageAdded: null,
  TurnQueued: null,
  PhaseChanged: null,
  TurnStarted: (d) => [
    'turn.started',
    {
      turnId: d.turnId,
      ...(d.intent === undefined ? {} : { intent: d.intent, confidence: d.confidence }),
      ...(d.replaceFrom === undefined ? {} : { replaceFrom: d.replaceFrom }),
    },
  ],
  ConversationUpdated: (d) => [
    'conversation.updated',
    {
      ...(d.title === undefined ? {} : { title: d.title }),
      ...(d.metadata === undefined ? {} : { metadata: d.metadata }),
    },
  ],
  FeedbackGiven: null,
  ToolCallRequested: (d) => [
    'tool.call',
    {
      turnId: d.turnId,
      toolCallId: d.toolCallId,
      name: d.name,
      args: d.args,
      ...(d.childConversationId ? { childConversationId: d.childConversationId } : {}),
      ...clientCallOf(d),
    },
  ],
  ApprovalRequested: (d) => [
    'approval.required',
    {
      turnId: d.turnId,
      approvalId: d.approvalId,
      toolCallId: d.toolCallId,
      name: d.name,
      args: d.args,
      ...(d.message !== undefined ? { message: d.message } : {}),
    },
  ],
  // A descendant's approval, shown in the parent's stream; decided through its conversation's route.
  ChildApprovalRequested: (d) => [
    'approval.required',
    {
      turnId: d.turnId,
      conversationId: d.conversationId,
      approvalId: d.approvalId,
      toolCallId: d.childToolCallId,
      name: d.name,
      args: d.args,
      ...(d.message !== undefined ? { message: d.message } : {}),
    },
  ],
  ApprovalDecided: (d) => [
    'approval.decided',
    {
      approvalId: d.approvalId,
      decision: d.decision,
      by: d.by,
      // An approved client call: the client runs it now, by this deadline.
      ...(d.deadline ? { toolCallId: d.toolCallId, deadline: d.deadline } : {}),
    },
  ],
  ApprovalDecidedByPolicy: (d) => [
    'approval.decided',
    { approvalId: d.approvalId, toolCallId: d.toolCallId, decision: 'approve', by: 'policy' },
  ],
  ToolCallCompleted: (d) => [
    'tool.result',
    {
      turnId: d.turnId,
      toolCallId: d.toolCallId,
      name: d.name,
      ok: d.ok,
      ...(d.result !== undefined ? { result: d.result } : {}),
      ...(d.error !== undefined ? { error: d.error } : {}),
    },
  ],
  AssistantMessageCompleted: (d) => [
    'message.completed',
    { turnId: d.turnId, messageId: d.messageId, text: d.text },
  ],
  UsageRecorded: (d) => [
    'usage',
    {
      turnId: d.turnId,
      model: d.model,
      promptTokens: d.promptTokens,
      completionTokens: d.completionTokens,
      cacheReadTokens: d.cacheReadTokens,
      costUsd: d.costUsd,
    },
  ],
  TurnCompleted: (d) => [
    'turn.completed',
    { turnId: d.turnId, finishReason: d.finishReason, affected: d.affected ?? [] },
  ],
  TurnFailed: (d) => ['turn.failed', { turnId: d.turnId, error: d.error }],
  TurnCancelled: (d) => ['turn.cancelled', { turnId: d.turnId }],
};

/** A hook's answer (API.md "Hooks"): the `data` frame `{ hook, data }`. */
const hookDataFrame = (event: RecordedEvent): FeedFrame => {
  const { hook, data } = event.data as HookDataReceived['data'];
  return { id: String(event.version), event: 'data', data: { hook, data } };
};

/**
 * The frame of a durable conversation event, id = its version; undefined for the events API.md
 * does not name (ConversationCreated, UserMessageAdded, TurnQueued, PhaseChanged, unknown types).
 */
export const durableFrame = (event: RecordedEvent): FeedFrame | undefined => {
  if (event.type === 'HookDataReceived') return hookDataFrame(event);
  // A run's stream (GET /v1/runs/{id}/events) is read by the same feed.
  if (!Object.hasOwn(DURABLE, event.type)) return runFrame(event);
  const map = DURABLE[event.type as ConversationEvent['type']] as
    ((data: unknown) => [string, unknown]) | null;
  if (!map) return undefined;
  const [name, data] = map(event.data);
  return { id: String(event.version), event: name, data };
};

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The frame of an ephemeral message of the conversation's `deltas` topic, id
 * `<version of the last durable event sent>.<seq>`: a delta uses its own seq; a context message
 * (which has none) reuses the last seq seen. Undefined for anything else.
 */
export const ephemeralFrame = (
  message: unknown,
  lastVersion: number,
  lastSeq: number,
): { frame: FeedFrame; seq: number } | undefined => {
  if (!isRecord(message) || typeof message.turnId !== 'string') return undefined;
  if (message.type === 'delta' && typeof message.text === 'string') {
    const seq =
      typeof message.seq === 'number' && Number.isSafeInteger(message.seq) ? message.seq : lastSeq + 1;
    return {
      seq,
      frame: {
        id: `${lastVersion}.${seq}`,
        event: 'message.delta',
        data: { turnId: message.turnId, text: message.text },
      },
    };
  }
  if (message.type === 'context') {
    return {
      seq: lastSeq,
      frame: {
        id: `${lastVersion}.${lastSeq}`,
        event: 'context',
        data: {
          turnId: message.turnId,
          contextTokens: message.contextTokens ?? null,
          windowTokens: message.windowTokens ?? null,
        },
      },
    };
  }
  return undefined;
};

/**
 * The log version an ephemeral message follows (its `version`: the conversation version the agent
 * had when it published it), or undefined when it names none (messages of older agents).
 */
export const ephemeralVersion = (message: unknown): number | undefined =>
  isRecord(message) && typeof message.version === 'number' && Number.isSafeInteger(message.version)
    ? message.version
    : undefined;

/** A frame as written on the wire: `id`, `event`, one `data` line of JSON, a blank line. */
export const renderFrame = (frame: FeedFrame): string =>
  `id: ${frame.id}\nevent: ${frame.event}\ndata: ${JSON.stringify(frame.data)}\n\n`;

const RESUME_ID = /^(0|[1-9][0-9]{0,14})(?:\.(0|[1-9][0-9]{0,14}))?$/;

/**
 * The version to resume after: `Last-Event-ID` (`<version>` or `<version>.<seq>`, which resumes
 * after `<version>`: deltas are not replayed) wins over `?after=<version>`; neither → 0 (from the
 * start). Anything else is a 400 naming the field.
 */
export const resumeAfter = (lastEventId: string | undefined, after: string | undefined): number => {
  if (lastEventId !== undefined && lastEventId.trim() !== '') {
    const match = RESUME_ID.exec(lastEventId.trim());
    if (!match) {
      throw new ValidationError('must be <version> or <version>.<seq>', { field: 'Last-Event-ID' });
    }
    return Number(match[1]);
  }
  if (after !== undefined) {
    const match = RESUME_ID.exec(after);
    if (!match || match[2] !== undefined) {
      throw new ValidationError('must be a non-negative integer version', { field: 'after' });
    }
    return Number(match[1]);
  }
  return 0;
};
