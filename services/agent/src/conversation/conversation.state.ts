import type { ActorRole, AgentSnapshot, ConversationEvent, ToolCallRequest } from '@keel/events';

/** A message of the conversation as the model and the API see it. */
export interface ConversationMessage {
  id: string;
  role: 'user' | 'assistant' | 'tool';
  content: string;
  toolCalls?: ToolCallRequest[];
  toolCallId?: string;
  /** For tool messages: whether the tool succeeded, and its full result or error. */
  ok?: boolean;
}

/** A tool call of the running turn and where it stands. */
export interface TurnToolCall {
  toolCallId: string;
  name: string;
  args: unknown;
  state: 'awaiting_approval' | 'requested' | 'completed';
  approvalId?: string;
}

/** An approval waiting for a person. */
export interface PendingApproval {
  approvalId: string;
  toolCallId: string;
  turnId: string;
  tool: string;
  args: unknown;
  requestedAt: string;
}

/** The running turn. */
export interface CurrentTurn {
  turnId: string;
  agent: AgentSnapshot;
  /** Role of the key whose message started the turn. */
  role: ActorRole;
  /** Model calls made so far in this turn. */
  step: number;
  toolCalls: TurnToolCall[];
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
  status: 'new' | 'idle' | 'running' | 'awaiting_approval' | 'failed';
  createdAt: string;
  title?: string;
  /** The string metadata given at creation. */
  metadata?: Record<string, string>;
  messages: ConversationMessage[];
  turn?: CurrentTurn;
  /** Turns waiting behind the running one (`ifBusy: enqueue`), oldest first. */
  queued: Array<{ turnId: string; messageId: string; agent: AgentSnapshot; role: ActorRole }>;
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

/** The status a running turn has: paused while any of its tool calls awaits a decision. */
const runningStatus = (turn: CurrentTurn): Conversation['status'] =>
  turn.toolCalls.some((c) => c.state === 'awaiting_approval') ? 'awaiting_approval' : 'running';

const withTurn = (state: Conversation, turn: CurrentTurn): Conversation => ({
  ...state,
  turn,
  status: runningStatus(turn),
});

const updateCall = (turn: CurrentTurn, toolCallId: string, change: Partial<TurnToolCall>): CurrentTurn => ({
  ...turn,
  toolCalls: turn.toolCalls.map((c) => (c.toolCallId === toolCallId ? { ...c, ...change } : c)),
});

/** What each event changes in the conversation itself. */
const evolveEvent = (state: Conversation, event: ConversationEvent): Conversation => {
  switch (event.type) {
    case 'ConversationCreated': {
      const { conversationId, agentId, title, metadata, createdAt } = event.data;
      return {
        ...state,
        id: conversationId,
        agentId,
        createdAt,
        status: 'idle',
        ...(title ? { title } : {}),
        ...(metadata && Object.keys(metadata).length > 0 ? { metadata } : {}),
      };
    }
    case 'UserMessageAdded': {
      const message: ConversationMessage = {
        id: event.data.messageId,
        role: 'user',
        content: event.data.content,
      };
      // Added while another turn runs: the message of a queued turn, held until that turn starts.
      if (state.turn && state.turn.turnId !== event.data.turnId) {
        return { ...state, heldMessages: [...state.heldMessages, { turnId: event.data.turnId, message }] };
      }
      return { ...state, messages: [...state.messages, message] };
    }
    case 'TurnQueued':
      return {
        ...state,
        queued: [
          ...state.queued,
          {
            turnId: event.data.turnId,
            messageId: event.data.messageId,
            agent: event.data.agent,
            role: event.data.role,
          },
        ],
      };
    case 'TurnStarted': {
      const { turnId } = event.data;
      const released = state.heldMessages.filter((h) => h.turnId === turnId).map((h) => h.message);
      return withTurn(
        {
          ...state,
          messages: released.length > 0 ? [...state.messages, ...released] : state.messages,
          queued: state.queued.filter((q) => q.turnId !== turnId),
          heldMessages: state.heldMessages.filter((h) => h.turnId !== turnId),
        },
        { turnId, agent: event.data.agent, role: event.data.role, step: 0, toolCalls: [] },
      );
    }
    case 'AssistantMessageCompleted': {
      const { messageId, text, toolCalls, step } = event.data;
      const message: ConversationMessage = {
        id: messageId,
        role: 'assistant',
        content: text,
        ...(toolCalls.length > 0 ? { toolCalls } : {}),
      };
      const next = { ...state, messages: [...state.messages, message] };
      return state.turn ? withTurn(next, { ...state.turn, step }) : next;
    }
    case 'UsageRecorded':
      return {
        ...state,
        usage: {
          promptTokens: state.usage.promptTokens + event.data.promptTokens,
          completionTokens: state.usage.completionTokens + event.data.completionTokens,
          cacheReadTokens: state.usage.cacheReadTokens + event.data.cacheReadTokens,
          costUsd: state.usage.costUsd + (event.data.costUsd ?? 0),
        },
      };
    case 'ToolCallRequested': {
      if (!state.turn) return state;
      const { toolCallId, name, args, approvalRequired } = event.data;
      const call: TurnToolCall = {
        toolCallId,
        name,
        args,
        state: approvalRequired ? 'awaiting_approval' : 'requested',
      };
      return withTurn(state, { ...state.turn, toolCalls: [...state.turn.toolCalls, call] });
    }
    case 'ApprovalRequested': {
      const { approvalId, toolCallId, turnId, name, args, requestedAt } = event.data;
      const pending: PendingApproval = { approvalId, toolCallId, turnId, tool: name, args, requestedAt };
      const next = { ...state, pendingApprovals: [...state.pendingApprovals, pending] };
      return state.turn ? withTurn(next, updateCall(state.turn, toolCallId, { approvalId })) : next;
    }
    case 'ApprovalDecided': {
      const { approvalId, toolCallId, decision } = event.data;
      const next = {
        ...state,
        pendingApprovals: state.pendingApprovals.filter((a) => a.approvalId !== approvalId),
        decidedApprovals: [...state.decidedApprovals, approvalId],
      };
      if (!state.turn || decision === 'deny') return state.turn ? withTurn(next, state.turn) : next;
      return withTurn(next, updateCall(state.turn, toolCallId, { state: 'requested' }));
    }
    case 'ToolCallCompleted': {
      const { toolCallId, ok, result, error } = event.data;
      const content = ok ? JSON.stringify(result ?? null) : JSON.stringify({ error });
      const message: ConversationMessage = {
        id: `tool-${toolCallId}`,
        role: 'tool',
        content,
        toolCallId,
        ok,
      };
      const next = { ...state, messages: [...state.messages, message] };
      return state.turn ? withTurn(next, updateCall(state.turn, toolCallId, { state: 'completed' })) : next;
    }
    case 'PhaseChanged':
      return { ...state, phase: event.data.to };
    case 'TurnCompleted': {
      const { turn: _done, ...rest } = state;
      return { ...rest, status: 'idle' };
    }
    case 'TurnFailed': {
      const { turn: _failed, ...rest } = state;
      return { ...rest, status: 'failed' };
    }
    case 'TurnCancelled': {
      const { turn: _cancelled, ...rest } = state;
      const withdrawn = new Set(event.data.withdrawnApprovals);
      return {
        ...rest,
        status: 'idle',
        pendingApprovals: state.pendingApprovals.filter((a) => !withdrawn.has(a.approvalId)),
        decidedApprovals: [...state.decidedApprovals, ...event.data.withdrawnApprovals],
      };
    }
    default: {
      // An event this version does not know (a newer writer's) changes nothing it can read.
      const _unknown: never = event;
      return state;
    }
  }
};
