import type { EventData } from '@keel/core';
import type { EndUser } from './end-user.js';
import type { AgentIntent } from './model-events.js';
import type { ChildApprovalRequested, ParentLink } from './sub-agent-events.js';

/** Category of the conversation streams: `conversation-<conversationId>`. */
export const CONVERSATION_CATEGORY = 'conversation';

/** A tool call as the model asked for it. */
export interface ToolCallRequest {
  toolCallId: string;
  name: string;
  args: unknown;
}

/** Why a turn ended normally: the model answered (`stop`) or the step budget ran out. */
export type FinishReason = 'stop' | 'max_steps';

/** Tokens and cost of one model call; `costUsd` is null when the model's price is unknown. */
export interface ModelUsage {
  model: string;
  promptTokens: number;
  completionTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  costUsd: number | null;
  /**
   * Why `costUsd` is null (an unknown model, pricing unreachable); absent when priced. Added
   * before any version was published, optional, so events written without it read the same.
   */
  costReason?: string;
}

/** A typed error carried by failed turns and tool results. */
export interface EventError {
  code: string;
  message: string;
}

/** The agent as it was when a turn started: later edits of the agent do not change a running turn. */
export interface AgentSnapshot {
  agentId: string;
  model: string;
  maxSteps: number;
  /**
   * The sampling temperature the turn's model calls use (the agent's own, else the tenant's
   * default when the turn started); absent in turns started before it was recorded.
   */
  temperature?: number;
  /** The agent's phase machine, when it declares one (see the tool guard). */
  phases?: AgentPhases;
  /**
   * The agent's intent the turn's message matched (the event's `intent` names it), as it was
   * defined when the turn started: it narrows the turn's tools and adds its guidance.
   */
  matchedIntent?: AgentIntent;
}

/** Phases an agent moves through: a successful result of `tool` in `from` (any when absent) moves to `to`. */
export interface AgentPhases {
  initial: string;
  transitions: Array<{ from?: string; tool: string; to: string }>;
}

/**
 * The client request (its `Idempotency-Key`) a command came from, recorded on the event that
 * accepted it so a retry of that request, through any gateway, after any failure, gets the first
 * outcome instead of doing the work again (the conversation decider looks it up). `key` is a
 * digest of the operation and the client's key (the key itself is never stored); `hash` is an
 * HMAC of the request's fields under the client's key, so the same key with another request is
 * a conflict. An optional field added to ConversationCreated, UserMessageAdded, ApprovalDecided
 * and TurnCancelled: events recorded before it (or without a key) lack it and read the same.
 */
export interface AcceptedRequest {
  key: string;
  hash: string;
}

/** The conversation exists. */
export type ConversationCreated = EventData<
  'ConversationCreated',
  {
    conversationId: string;
    agentId: string;
    title?: string;
    metadata?: Record<string, string>;
    createdAt: string;
    /** A sub-agent call's child: the parent's call and chain (absent for a conversation a client created). */
    parent?: ParentLink;
    /** Agents offered to this conversation as sub-agents besides its agent's own (a hierarchical run's manager: the members). */
    delegates?: string[];
    /** The acting user who created it (API `userId`); absent in events recorded before it. */
    userId?: string;
    /** The create request's Idempotency-Key (see AcceptedRequest); absent without one. */
    request?: AcceptedRequest;
  }
>;

/** A user message was added; it starts (or queues) a turn. */
export type UserMessageAdded = EventData<
  'UserMessageAdded',
  {
    messageId: string;
    turnId: string;
    content: string;
    at: string;
    /**
     * Edit/regenerate (API `replaceFrom`): the id of an earlier user message of the branch; the
     * branch is cut just before it and this message follows. The log keeps the old branch.
     */
    replaceFrom?: string;
    /** What the user's screen showed (API `context`, a JSON object); absent when none was sent. */
    context?: Record<string, unknown>;
    /** The send request's Idempotency-Key (see AcceptedRequest); absent without one. */
    request?: AcceptedRequest;
  }
>;

/**
 * The intent the agent's intents classified a turn's user message as (API `turn.started`'s
 * `intent` and `confidence`); absent when none matched.
 */
export interface TurnIntent {
  intent?: string;
  /** The matched intent's share of all keyword hits, (0, 1]. */
  confidence?: number;
}

/** A message arrived while a turn ran, with `ifBusy: enqueue`: its turn runs after the current one. */
export type TurnQueued = EventData<
  'TurnQueued',
  {
    turnId: string;
    messageId: string;
    agent: AgentSnapshot;
    role: ActorRole;
    at: string;
    /** The end user the turn runs for (see TurnStarted.user); absent in events recorded before it. */
    user?: EndUser;
  } & TurnIntent
>;

/** Roles of the keys that act on a conversation (the guard's role matrix reads it). */
export type ActorRole = 'admin' | 'editor' | 'viewer';

/**
 * A turn started (API `turn.started`); `role` is the role of the key whose message started it,
 * `intent`/`confidence` what its message was classified as.
 */
export type TurnStarted = EventData<
  'TurnStarted',
  {
    turnId: string;
    agent: AgentSnapshot;
    role: ActorRole;
    at: string;
    /** The user message this turn's message replaced (API `turn.started.replaceFrom`); absent when none. */
    replaceFrom?: string;
    /**
     * The end user the turn runs for: `X-Keel-User` (else the key id) and `X-Keel-User-Role` when
     * sent. Tools are offered by its role; instructions and tool calls read it. Absent in events
     * recorded before it.
     */
    user?: EndUser;
  } & TurnIntent
>;

/** The model finished one step (API `message.completed`, and `tool.call` per tool call). */
export type AssistantMessageCompleted = EventData<
  'AssistantMessageCompleted',
  { turnId: string; step: number; messageId: string; text: string; toolCalls: ToolCallRequest[]; at: string }
>;

/**
 * Tokens of one model call (API `usage`). `costUsd` is null when the model's price is unknown.
 * `at` is the instant of the call (the one its price was taken at). Events recorded before it was
 * added lack it in the log; every read lifts them (`usageRecordedAt`: the commit time), so a
 * reader always has it.
 */
export type UsageRecorded = EventData<
  'UsageRecorded',
  { turnId: string; step: number; at: string } & ModelUsage
>;

/** A tool call passed the guard and goes to the tools service (API `tool.call`). */
export type ToolCallRequested = EventData<
  'ToolCallRequested',
  {
    turnId: string;
    toolCallId: string;
    name: string;
    args: unknown;
    approvalRequired: boolean;
    /** The resources the tool declares it changes (its `affects`); absent when none. */
    affects?: string[];
    /** A sub-agent call's child conversation (its id derived from the call's): the agent runs it. */
    childConversationId?: string;
    /** `client` when the connected client runs the call (API "Client tools"); absent: the tools service. */
    executor?: 'client';
    /** A client call's time limit (its tool's `timeoutMs`): its deadline is this after it may run. */
    timeoutMs?: number;
    /** A client call's deadline when it needs no approval (else the approving ApprovalDecided's). */
    deadline?: string;
    /** The turn's end user, sent with webhook and MCP calls (API "The end user"); absent before it. */
    user?: EndUser;
    /** The conversation's metadata when the call was asked for, sent with webhook and MCP calls. */
    metadata?: Record<string, string>;
    at: string;
  }
>;

/** A tool call needs a person's decision before it runs (API `approval.required`). */
export type ApprovalRequested = EventData<
  'ApprovalRequested',
  {
    turnId: string;
    approvalId: string;
    toolCallId: string;
    name: string;
    args: unknown;
    /** The tool's approval policy's message, filled from the arguments (API `approval.required`). */
    message?: string;
    requestedAt: string;
  }
>;

/** A person approved or denied a tool call (API `approval.decided`). */
export type ApprovalDecided = EventData<
  'ApprovalDecided',
  {
    turnId: string;
    approvalId: string;
    toolCallId: string;
    decision: 'approve' | 'deny';
    by: string;
    reason?: string;
    at: string;
    /** The decide request's Idempotency-Key (see AcceptedRequest); absent without one. */
    request?: AcceptedRequest;
    /** An approved client call's deadline (`at` + its timeoutMs): the client runs it from now. */
    deadline?: string;
  }
>;

/**
 * A tool's approval policy evaluated its `when` against the call's arguments and let the call run
 * without a person (API `approval.decided` with `by: "policy"`). Recorded after the call's
 * ToolCallRequested; it triggers nothing (the request already did).
 */
export type ApprovalDecidedByPolicy = EventData<
  'ApprovalDecidedByPolicy',
  { turnId: string; approvalId: string; toolCallId: string; name: string; at: string }
>;

/** A tool call's outcome, from the tools service, a denial, or the guard (API `tool.result`). */
export type ToolCallCompleted = EventData<
  'ToolCallCompleted',
  {
    turnId: string;
    toolCallId: string;
    name: string;
    ok: boolean;
    result?: unknown;
    error?: EventError;
    at: string;
  }
>;

/** A tool result moved the conversation to another phase of its agent. */
export type PhaseChanged = EventData<
  'PhaseChanged',
  { turnId: string; from: string; to: string; toolCallId: string; at: string }
>;

/** The turn ended normally (API `turn.completed`). */
export type TurnCompleted = EventData<
  'TurnCompleted',
  {
    turnId: string;
    finishReason: FinishReason;
    /**
     * The union of the `affects` of the turn's successful tool calls, sorted, unique (API
     * `turn.completed.affected`). Absent in events recorded before it: read as none.
     */
    affected?: string[];
    at: string;
  }
>;

/** The turn failed (API `turn.failed`). */
export type TurnFailed = EventData<'TurnFailed', { turnId: string; error: EventError; at: string }>;

/** The turn was cancelled; its pending approvals are withdrawn (API `turn.cancelled`). */
export type TurnCancelled = EventData<
  'TurnCancelled',
  {
    turnId: string;
    by: string;
    withdrawnApprovals: string[];
    at: string;
    /** The cancel request's Idempotency-Key (see AcceptedRequest); absent without one. */
    request?: AcceptedRequest;
  }
>;

/**
 * The conversation's title or metadata changed (API `conversation.updated`): by `PATCH`, or by
 * the agent's auto title (`auto`, once per conversation, after the turn `turnId`). Only the fields
 * that changed are present; `metadata` replaces the whole map (`{}` clears it).
 */
export type ConversationUpdated = EventData<
  'ConversationUpdated',
  {
    title?: string;
    metadata?: Record<string, string>;
    by: string;
    /** Set on the auto title: the turn after which the title call ran. */
    auto?: { turnId: string };
    at: string;
  }
>;

/** A rating of a message (API `POST …/messages/{messageId}/feedback`). */
export type FeedbackRating = 'up' | 'down';

/**
 * A person rated a message; the latest rating per message counts. `previous` is the rating it
 * replaces (so usage can move the count), `agentId` the conversation's agent (usage by agent).
 */
export type FeedbackGiven = EventData<
  'FeedbackGiven',
  {
    messageId: string;
    rating: FeedbackRating;
    comment?: string;
    previous?: FeedbackRating;
    agentId: string;
    by: string;
    at: string;
  }
>;

/** Every event of a conversation stream. */
export type ConversationEvent =
  | ConversationCreated
  | UserMessageAdded
  | TurnQueued
  | TurnStarted
  | AssistantMessageCompleted
  | UsageRecorded
  | ToolCallRequested
  | ApprovalRequested
  | ApprovalDecided
  | ApprovalDecidedByPolicy
  | ToolCallCompleted
  | PhaseChanged
  | TurnCompleted
  | TurnFailed
  | TurnCancelled
  | ChildApprovalRequested
  | ConversationUpdated
  | FeedbackGiven;

/** The event type names of a conversation stream. */
export const CONVERSATION_EVENT_TYPES = [
  'ConversationCreated',
  'UserMessageAdded',
  'TurnQueued',
  'TurnStarted',
  'AssistantMessageCompleted',
  'UsageRecorded',
  'ToolCallRequested',
  'ApprovalRequested',
  'ApprovalDecided',
  'ApprovalDecidedByPolicy',
  'ToolCallCompleted',
  'PhaseChanged',
  'TurnCompleted',
  'TurnFailed',
  'TurnCancelled',
  'ChildApprovalRequested',
  'ConversationUpdated',
  'FeedbackGiven',
] as const satisfies ReadonlyArray<ConversationEvent['type']>;

/** The turn an event belongs to, when its data names one (most conversation events do). */
export const turnIdOf = (event: { data: unknown }): string | undefined => {
  const { data } = event;
  if (typeof data !== 'object' || data === null || !('turnId' in data)) return undefined;
  return typeof data.turnId === 'string' ? data.turnId : undefined;
};
