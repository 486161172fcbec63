import type {
  ActorRole,
  AgentSnapshot,
  ConversationEvent,
  EndUser,
  FeedbackRating,
  ParentLink,
  ToolCallRequest,
  TurnIntent,
} from '@keel/events';

/** A message of the conversation as the model and the API see it. */
export interface ConversationMessage {
  id: string;
  role: 'user' | 'assistant' | 'tool';
  content: string;
  toolCalls?: ToolCallRequest[];
  toolCallId?: string;
  /** For tool messages: whether the tool succeeded, and its full result or error. */
  ok?: boolean;
  /** The latest rating given to it (API `POST …/feedback`). */
  feedback?: { rating: FeedbackRating; comment?: string };
  /** For user messages: the per-message context it was sent with (API `messages[].context`). */
  context?: Record<string, unknown>;
}

/** A tool call of the running turn and where it stands. */
export interface TurnToolCall {
  toolCallId: string;
  name: string;
  args: unknown;
  state: 'awaiting_approval' | 'requested' | 'completed';
  approvalId?: string;
  /** The resources the tool declares it changes (from its ToolCallRequested). */
  affects?: string[];
  /** Whether it succeeded, once completed. */
  ok?: boolean;
  /** `client` when the connected client runs it (API "Client tools"). */
  executor?: 'client';
  /** A client call's time limit, from its ToolCallRequested. */
  timeoutMs?: number;
  /** A client call's deadline, once it may run (requested without approval, or approved). */
  deadline?: string;
  /** A sub-agent call's child conversation. */
  childConversationId?: string;
  /** A sub-agent call's descendants' approvals shown in this stream (each once). */
  childApprovals?: string[];
}

/** A client call the client is to answer now (API `pendingClientCalls`). */
export interface PendingClientCall {
  toolCallId: string;
  tool: string;
  args: unknown;
  deadline: string;
}

/** The running turn's client calls that wait for the client's answer, in the order asked. */
export const pendingClientCalls = (state: Conversation): PendingClientCall[] =>
  (state.turn?.toolCalls ?? []).flatMap((c) =>
    c.executor === 'client' && c.state === 'requested' && c.deadline !== undefined
      ? [{ toolCallId: c.toolCallId, tool: c.name, args: c.args, deadline: c.deadline }]
      : [],
  );

/** What the turn's successful tool calls changed: their `affects`, sorted, unique. */
export const affectedBy = (turn: CurrentTurn): string[] =>
  [...new Set(turn.toolCalls.filter((c) => c.ok === true).flatMap((c) => c.affects ?? []))].sort();

/** An approval waiting for a person. */
export interface PendingApproval {
  approvalId: string;
  toolCallId: string;
  turnId: string;
  tool: string;
  args: unknown;
  requestedAt: string;
}

/** The running turn; `intent`/`confidence` as its TurnStarted recorded them (the worker narrows by them). */
export interface CurrentTurn extends TurnIntent {
  turnId: string;
  agent: AgentSnapshot;
  /** Role of the key whose message started the turn. */
  role: ActorRole;
  /** Model calls made so far in this turn. */
  step: number;
  toolCalls: TurnToolCall[];
  /** The end user the turn runs for; absent in turns recorded before it. */
  user?: EndUser;
  /** When the turn started (its TurnStarted's `at`): the turn's `{{now}}`. */
  startedAt?: string;
}

/**
 * A client request the conversation accepted (by the `request` of the event that recorded it),
 * with what its first answer said: a retry of it is answered the same, with nothing appended.
 */
export type AcceptedRequestOutcome =
  | { kind: 'create'; hash: string }
  | { kind: 'message'; hash: string; turnId: string; version: number }
  | { kind: 'approval'; hash: string; approvalId: string; decision: 'approve' | 'deny' }
  | { kind: 'cancel'; hash: string; turnId: string };

/** The conversation rebuilt from its events: plain JSON, so it snapshots as it is. */
export interface Conversation {
  id: string;
  agentId: string;
  status: 'new' | 'idle' | 'running' | 'awaiting_approval' | 'awaiting_client' | 'failed';
  createdAt: string;
  title?: string;
  /** The string metadata given at creation, as PATCH replaced it since. */
  metadata?: Record<string, string>;
  /** The acting user who created it; absent for conversations created before it was kept. */
  userId?: string;
  /** A sub-agent call's child: the parent's call and the chain above it. */
  parent?: ParentLink;
  /** Agents offered as sub-agents besides the agent's own (a hierarchical run's manager: the members). */
  delegates?: string[];
  /** The turn after which the auto title call was recorded: set once, never again. */
  autoTitledAfter?: string;
  /** The current branch: a message with `replaceFrom` cut what followed (the log keeps it). */
  messages: ConversationMessage[];
  /**
   * The prompt fill of the last model call (its prompt tokens as the provider reported them);
   * absent before the first call, and in snapshots taken before it was kept.
   */
  contextTokens?: number;
  turn?: CurrentTurn;
  /** Turns waiting behind the running one (`ifBusy: enqueue`), oldest first. */
  queued: Array<
    { turnId: string; messageId: string; agent: AgentSnapshot; role: ActorRole; user?: EndUser } & TurnIntent
  >;
  /**
   * Messages of queued turns, held out of `messages` (so out of the running turn's prompt and of
   * the API's `messages`) until their own turn starts.
   */
  heldMessages: Array<{ turnId: string; message: ConversationMessage }>;
  pendingApprovals: PendingApproval[];
  /** Approvals already decided (so a second decision is a conflict, not "unknown"). */
  decidedApprovals: string[];
  usage: { promptTokens: number; completionTokens: number; cacheReadTokens: number; costUsd: number };
  /** The agent phase the conversation is in; undefined means the agent's initial phase. */
  phase?: string;
  /** Events folded so far: the stream version this state is at. */
  version: number;
  /**
   * Every client request the conversation accepted, by `AcceptedRequest.key` (a hex digest): kept
   * for the conversation's life (one small entry per keyed request; the messages are larger), so
   * a retry at any time is recognised, and in snapshots, so snapshot + newer events answer alike.
   */
  requests: Record<string, AcceptedRequestOutcome>;
}

/** A turn's intent and confidence without absent fields (an event carries them only when matched). */
export const intentOf = ({ intent, confidence }: TurnIntent): TurnIntent =>
  intent === undefined || confidence === undefined ? {} : { intent, confidence };

/** A conversation before its first event. */
export const initialConversation = (): Conversation => ({
  id: '',
  agentId: '',
  status: 'new',
  createdAt: '',
  messages: [],
  queued: [],
  heldMessages: [],
  pendingApprovals: [],
  decidedApprovals: [],
  usage: { promptTokens: 0, completionTokens: 0, cacheReadTokens: 0, costUsd: 0 },
  version: 0,
  requests: {},
});

/** The request an event accepted, and the outcome a retry of it is answered with. */
const acceptedBy = (
  state: Conversation,
  event: ConversationEvent,
): [string, AcceptedRequestOutcome] | undefined => {
  switch (event.type) {
    case 'ConversationCreated': {
      const { request } = event.data;
      return request && [request.key, { kind: 'create', hash: request.hash }];
    }
    case 'UserMessageAdded': {
      const { request, turnId } = event.data;
      // The version just before the message: every event of its turn comes after it.
      return (
        request && [request.key, { kind: 'message', hash: request.hash, turnId, version: state.version }]
      );
    }
    case 'ApprovalDecided': {
      const { request, approvalId, decision } = event.data;
      return request && [request.key, { kind: 'approval', hash: request.hash, approvalId, decision }];
    }
    case 'TurnCancelled': {
      const { request, turnId } = event.data;
      return request && [request.key, { kind: 'cancel', hash: request.hash, turnId }];
    }
    default:
      return undefined;
  }
};

/**
 * Folds one event into the conversation: counts it (the state's version) and remembers the
 * client request it accepted, whatever else the event does.
 */
export const evolve = (state: Conversation, event: ConversationEvent): Conversation => {
  // Deleted (ConversationDeleted, not a command's event: the gateway's DELETE appends it): the
  // conversation folds back to never created, so every command and read answers not found.
  if ((event.type as string) === 'ConversationDeleted')
    return { ...initialConversation(), version: state.version + 1 };
  const accepted = acceptedBy(state, event);
  const next = evolveEvent(state, event);
  return {
    ...next,
    version: state.version + 1,
    ...(accepted ? { requests: { ...state.requests, [accepted[0]]: accepted[1] } } : {}),
  };
};

/** The outcome a request with this key had, if the conversation accepted one. */
export const acceptedRequest = (state: Conversation, key: string): AcceptedRequestOutcome | undefined =>
  Object.hasOwn(state.requests, key) ? state.requests[key] : undefined;

/**
 * The status a running turn has: paused while any of its tool calls awaits a decision, else
 * while any client call awaits the client's answer.
 */
const runningStatus = (turn: CurrentTurn): Conversation['status'] => {
  if (turn.toolCalls.some((c) => c.state === 'awaiting_approval')) return 'awaiting_approval';
  const client = turn.toolCalls.some((c) => c.executor === 'client' && c.state === 'requested');
  return client ? 'awaiting_client' : 'running';
};

const withTurn = (state: Conversation, turn: CurrentTurn): Conversation => ({
  ...state,
  turn,
  status: runningStatus(turn),
});

const updateCall = (turn: CurrentTurn, toolCallId: string, change: Partial<TurnToolCall>): CurrentTurn => ({
  ...turn,
  toolCalls: turn.toolCalls.map((c) => (c.toolCallId === toolCallId ? { ...c, ...change } : c)),
});

/** One event of the conversation, by its type. */
type EventOf<T extends ConversationEvent['type']> = Extract<ConversationEvent, { type: T }>;

const conversationCreated = (state: Conversation, { data }: EventOf<'ConversationCreated'>): Conversation => {
  const { conversationId, agentId, title, metadata, createdAt, userId, parent } = data;
  return {
    ...state,
    id: conversationId,
    agentId,
    createdAt,
    status: 'idle',
    ...(userId ? { userId } : {}),
    ...(parent ? { parent } : {}),
    ...(data.delegates ? { delegates: data.delegates } : {}),
    ...(title ? { title } : {}),
    ...(metadata && Object.keys(metadata).length > 0 ? { metadata } : {}),
  };
};

const userMessageAdded = (state: Conversation, { data }: EventOf<'UserMessageAdded'>): Conversation => {
  const message: ConversationMessage = {
    id: data.messageId,
    role: 'user',
    content: data.content,
    ...(data.context ? { context: data.context } : {}),
  };
  // Added while another turn runs: the message of a queued turn, held until that turn starts.
  if (state.turn && state.turn.turnId !== data.turnId) {
    return { ...state, heldMessages: [...state.heldMessages, { turnId: data.turnId, message }] };
  }
  return { ...state, messages: [...branchBefore(state.messages, data.replaceFrom), message] };
};

/**
 * The branch a message continues: all of it, or, when it replaces `replaceFrom` (edit or
 * regenerate), the messages before that one. The decider admits only a user message of the branch.
 */
export const branchBefore = (
  messages: ConversationMessage[],
  replaceFrom: string | undefined,
): ConversationMessage[] => {
  if (replaceFrom === undefined) return messages;
  const at = messages.findIndex((m) => m.id === replaceFrom);
  return at < 0 ? messages : messages.slice(0, at);
};

const conversationUpdated = (state: Conversation, { data }: EventOf<'ConversationUpdated'>): Conversation => {
  const { title, metadata } = data;
  const { metadata: _old, ...rest } = state;
  const next =
    metadata === undefined ? state : Object.keys(metadata).length > 0 ? { ...rest, metadata } : rest;
  return title === undefined ? next : { ...next, title };
};

const feedbackGiven = (state: Conversation, { data }: EventOf<'FeedbackGiven'>): Conversation => {
  const { messageId, rating, comment } = data;
  const feedback = { rating, ...(comment ? { comment } : {}) };
  return {
    ...state,
    messages: state.messages.map((m) => (m.id === messageId ? { ...m, feedback } : m)),
  };
};

const turnQueued = (state: Conversation, { data }: EventOf<'TurnQueued'>): Conversation => {
  const { turnId, messageId, agent, role, intent, confidence, user } = data;
  const queued = {
    turnId,
    messageId,
    agent,
    role,
    ...intentOf({ intent, confidence }),
    ...(user ? { user } : {}),
  };
  return { ...state, queued: [...state.queued, queued] };
};

const turnStarted = (state: Conversation, { data }: EventOf<'TurnStarted'>): Conversation => {
  const { turnId } = data;
  const released = state.heldMessages.filter((h) => h.turnId === turnId).map((h) => h.message);
  return withTurn(
    {
      ...state,
      messages: released.length > 0 ? [...state.messages, ...released] : state.messages,
      queued: state.queued.filter((q) => q.turnId !== turnId),
      heldMessages: state.heldMessages.filter((h) => h.turnId !== turnId),
    },
    {
      turnId,
      agent: data.agent,
      role: data.role,
      step: 0,
      toolCalls: [],
      ...intentOf(data),
      ...(data.user ? { user: data.user } : {}),
      startedAt: data.at,
    },
  );
};

const assistantMessageCompleted = (
  state: Conversation,
  { data }: EventOf<'AssistantMessageCompleted'>,
): Conversation => {
  const { messageId, text, toolCalls, step } = data;
  const message: ConversationMessage = {
    id: messageId,
    role: 'assistant',
    content: text,
    ...(toolCalls.length > 0 ? { toolCalls } : {}),
  };
  const next = { ...state, messages: [...state.messages, message] };
  return state.turn ? withTurn(next, { ...state.turn, step }) : next;
};

/** Usage of a model call; step 0 is the auto title's call, outside any turn's context. */
const usageRecorded = (state: Conversation, { data }: EventOf<'UsageRecorded'>): Conversation => ({
  ...state,
  ...(data.step === 0 ? { autoTitledAfter: data.turnId } : { contextTokens: data.promptTokens }),
  usage: {
    promptTokens: state.usage.promptTokens + data.promptTokens,
    completionTokens: state.usage.completionTokens + data.completionTokens,
    cacheReadTokens: state.usage.cacheReadTokens + data.cacheReadTokens,
    costUsd: state.usage.costUsd + (data.costUsd ?? 0),
  },
});

const toolCallRequested = (state: Conversation, { data }: EventOf<'ToolCallRequested'>): Conversation => {
  if (!state.turn) return state;
  const { toolCallId, name, args, approvalRequired, affects, executor, timeoutMs, deadline } = data;
  const { childConversationId } = data;
  const call: TurnToolCall = {
    toolCallId,
    name,
    args,
    state: approvalRequired ? 'awaiting_approval' : 'requested',
    ...(affects && affects.length > 0 ? { affects } : {}),
    ...(executor ? { executor } : {}),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    ...(deadline !== undefined ? { deadline } : {}),
    ...(childConversationId !== undefined ? { childConversationId } : {}),
  };
  return withTurn(state, { ...state.turn, toolCalls: [...state.turn.toolCalls, call] });
};

const approvalRequested = (state: Conversation, { data }: EventOf<'ApprovalRequested'>): Conversation => {
  const { approvalId, toolCallId, turnId, name, args, requestedAt } = data;
  const pending: PendingApproval = { approvalId, toolCallId, turnId, tool: name, args, requestedAt };
  const next = { ...state, pendingApprovals: [...state.pendingApprovals, pending] };
  return state.turn ? withTurn(next, updateCall(state.turn, toolCallId, { approvalId })) : next;
};

const approvalDecided = (state: Conversation, { data }: EventOf<'ApprovalDecided'>): Conversation => {
  const { approvalId, toolCallId, decision, deadline } = data;
  const next = {
    ...state,
    pendingApprovals: state.pendingApprovals.filter((a) => a.approvalId !== approvalId),
    decidedApprovals: [...state.decidedApprovals, approvalId],
  };
  if (!state.turn || decision === 'deny') return state.turn ? withTurn(next, state.turn) : next;
  const change = deadline === undefined ? {} : { deadline };
  return withTurn(next, updateCall(state.turn, toolCallId, { state: 'requested', ...change }));
};

const toolCallCompleted = (state: Conversation, { data }: EventOf<'ToolCallCompleted'>): Conversation => {
  const { toolCallId, ok, result, error } = data;
  const content = ok ? JSON.stringify(result ?? null) : JSON.stringify({ error });
  const message: ConversationMessage = { id: `tool-${toolCallId}`, role: 'tool', content, toolCallId, ok };
  const next = { ...state, messages: [...state.messages, message] };
  return state.turn ? withTurn(next, updateCall(state.turn, toolCallId, { state: 'completed', ok })) : next;
};

const childApprovalRequested = (
  state: Conversation,
  { data }: EventOf<'ChildApprovalRequested'>,
): Conversation => {
  const call = state.turn?.toolCalls.find((c) => c.toolCallId === data.toolCallId);
  if (!state.turn || !call) return state;
  const childApprovals = [...(call.childApprovals ?? []), data.approvalId];
  return withTurn(state, updateCall(state.turn, data.toolCallId, { childApprovals }));
};

/** The conversation without its current turn, in the status the turn's end leaves it. */
const turnEnded = (state: Conversation, status: 'idle' | 'failed'): Conversation => {
  const { turn: _ended, ...rest } = state;
  return { ...rest, status };
};

const turnCancelled = (state: Conversation, { data }: EventOf<'TurnCancelled'>): Conversation => {
  const withdrawn = new Set(data.withdrawnApprovals);
  return {
    ...turnEnded(state, 'idle'),
    pendingApprovals: state.pendingApprovals.filter((a) => !withdrawn.has(a.approvalId)),
    decidedApprovals: [...state.decidedApprovals, ...data.withdrawnApprovals],
  };
};

/** What each event changes in the conversation itself. */
const evolveEvent = (state: Conversation, event: ConversationEvent): Conversation => {
  switch (event.type) {
    case 'ConversationCreated':
      return conversationCreated(state, event);
    case 'UserMessageAdded':
      return userMessageAdded(state, event);
    case 'TurnQueued':
      return turnQueued(state, event);
    case 'TurnStarted':
      return turnStarted(state, event);
    case 'AssistantMessageCompleted':
      return assistantMessageCompleted(state, event);
    case 'UsageRecorded':
      return usageRecorded(state, event);
    case 'ToolCallRequested':
      return toolCallRequested(state, event);
    case 'ApprovalRequested':
      return approvalRequested(state, event);
    case 'ApprovalDecided':
      return approvalDecided(state, event);
    case 'ApprovalDecidedByPolicy':
      return state;
    case 'ChildApprovalRequested':
      return childApprovalRequested(state, event);
    case 'ToolCallCompleted':
      return toolCallCompleted(state, event);
    case 'PhaseChanged':
      return { ...state, phase: event.data.to };
    case 'TurnCompleted':
      return turnEnded(state, 'idle');
    case 'TurnFailed':
      return turnEnded(state, 'failed');
    case 'TurnCancelled':
      return turnCancelled(state, event);
    case 'ConversationUpdated':
      return conversationUpdated(state, event);
    case 'FeedbackGiven':
      return feedbackGiven(state, event);
    default: {
      // An event this version does not know (a newer writer's) changes nothing it can read.
      const _unknown: never = event;
      return state;
    }
  }
};
