import type { Decider } from '@keel/core';
import { ConflictError, NotFoundError, ValidationError, fold } from '@keel/core';
import type { AcceptedRequest, ConversationEvent, EventError, ToolCallCompleted } from '@keel/events';
import type { ConversationCommand, IfBusy } from './conversation.commands.js';
import { MAX_TITLE_CHARS, checkMetadata, checkTitle } from './conversation-fields.js';
import type {
  AcceptedRequestOutcome,
  Conversation,
  CurrentTurn,
  TurnToolCall,
} from './conversation.state.js';
import { acceptedRequest, affectedBy, evolve, initialConversation, intentOf } from './conversation.state.js';
import { nextPhase } from '../guard/tool-guard.js';

/** A message longer than this is refused (the gateway enforces its own, usually smaller, limit). */
export const MAX_MESSAGE_CHARS = 200_000;

/** Raised when a conversation is busy or an approval is already decided: HTTP 409 `conflict`. */
export class ConversationConflictError extends ConflictError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super(message, { details });
  }
}

/**
 * The first outcome of the client request a command came from, when the conversation accepted it
 * already (a retry: nothing is appended again). The same key with another request, or for another
 * operation, is a conflict naming Idempotency-Key.
 */
const acceptedBefore = <K extends AcceptedRequestOutcome['kind']>(
  state: Conversation,
  request: AcceptedRequest | undefined,
  kind: K,
): Extract<AcceptedRequestOutcome, { kind: K }> | undefined => {
  if (!request) return undefined;
  const seen = acceptedRequest(state, request.key);
  if (!seen) return undefined;
  if (seen.kind !== kind || seen.hash !== request.hash) {
    throw new ConversationConflictError('Idempotency-Key was already used with a different request', {
      field: 'Idempotency-Key',
    });
  }
  return seen as Extract<AcceptedRequestOutcome, { kind: K }>;
};

/** The `request` field of an event: present only when the command came with one. */
const withRequest = (request: AcceptedRequest | undefined): { request?: AcceptedRequest } =>
  request ? { request } : {};

const requireExists = (state: Conversation): void => {
  if (state.status === 'new') throw new NotFoundError('conversation not found');
};

const requireTurn = (state: Conversation, turnId: string): CurrentTurn => {
  if (!state.turn || state.turn.turnId !== turnId) {
    throw new ConversationConflictError(`turn ${turnId} is not running`, { turnId });
  }
  return state.turn;
};

/** Results for every tool call of the turn that has none yet, so the next model call sees a reply to each. */
const closeOpenCalls = (turn: CurrentTurn, error: EventError, at: string): ToolCallCompleted[] =>
  turn.toolCalls
    .filter((c) => c.state !== 'completed')
    .map((c) => ({
      type: 'ToolCallCompleted',
      data: { turnId: turn.turnId, toolCallId: c.toolCallId, name: c.name, ok: false, error, at },
    }));

/** The state after the given events. */
const applied = (events: readonly ConversationEvent[], state: Conversation): Conversation =>
  fold({ initialState: initialConversation, evolve }, events, state);

/** Starts the next queued turn, if any, after the current one ended. */
const startNextQueued = (state: Conversation, at: string): ConversationEvent[] => {
  const next = state.queued[0];
  if (!next) return [];
  const { turnId, agent, role, user } = next;
  return [
    { type: 'TurnStarted', data: { turnId, agent, role, at, ...intentOf(next), ...(user ? { user } : {}) } },
  ];
};

/** When the last open tool call of a turn completes, the turn needs another model step, or it is over. */
const afterToolCalls = (
  state: Conversation,
  events: ConversationEvent[],
  at: string,
): ConversationEvent[] => {
  const after = applied(events, state);
  const turn = after.turn;
  if (!turn || turn.toolCalls.some((c) => c.state !== 'completed')) return events;
  if (turn.step < turn.agent.maxSteps) return events;
  return [
    ...events,
    {
      type: 'TurnCompleted',
      data: { turnId: turn.turnId, finishReason: 'max_steps', affected: affectedBy(turn), at },
    },
    ...startNextQueued(after, at),
  ];
};

/** One command of the conversation aggregate, by its type. */
type CommandOf<T extends ConversationCommand['type']> = Extract<ConversationCommand, { type: T }>;

const createConversation = (
  command: CommandOf<'CreateConversation'>,
  state: Conversation,
): ConversationEvent[] => {
  if (state.status !== 'new') {
    if (acceptedBefore(state, command.request, 'create')) return [];
    throw new ConversationConflictError('conversation already exists', { conversationId: state.id });
  }
  const { conversationId, agentId, title, metadata, userId, parent, request, at } = command;
  return [
    {
      type: 'ConversationCreated',
      data: {
        conversationId,
        agentId,
        createdAt: at,
        ...(userId ? { userId } : {}),
        ...(parent ? { parent } : {}),
        ...(command.delegates && command.delegates.length > 0 ? { delegates: command.delegates } : {}),
        ...(title ? { title } : {}),
        ...(metadata ? { metadata } : {}),
        ...withRequest(request),
      },
    },
  ];
};

const requireContent = (content: string): void => {
  if (content.trim().length === 0)
    throw new ValidationError('content must not be empty', { field: 'content' });
  if (content.length > MAX_MESSAGE_CHARS) {
    throw new ValidationError(`content is over ${MAX_MESSAGE_CHARS} characters`, { field: 'content' });
  }
};

/**
 * An edit/regenerate's `replaceFrom`: a user message of the current branch, and not for a queued
 * turn (the branch it would cut is not known until that turn starts).
 */
const requireReplaceable = (state: Conversation, replaceFrom: string | undefined, ifBusy: IfBusy): void => {
  if (replaceFrom === undefined) return;
  const message = state.messages.find((m) => m.id === replaceFrom);
  if (!message || message.role !== 'user') {
    throw new ValidationError('replaceFrom must be the id of a user message of the conversation', {
      field: 'replaceFrom',
    });
  }
  if (state.turn && ifBusy === 'enqueue') {
    throw new ValidationError('replaceFrom cannot be queued behind a running turn (ifBusy: enqueue)', {
      field: 'replaceFrom',
    });
  }
};

const submitMessage = (command: CommandOf<'SubmitMessage'>, state: Conversation): ConversationEvent[] => {
  requireExists(state);
  if (acceptedBefore(state, command.request, 'message')) return [];
  const { turnId, messageId, content, ifBusy, agent, role, by, request, at, classified, replaceFrom } =
    command;
  const { context, user } = command;
  requireContent(content);
  requireReplaceable(state, replaceFrom, ifBusy);
  const replacing = replaceFrom === undefined ? {} : { replaceFrom };
  const added: ConversationEvent = {
    type: 'UserMessageAdded',
    data: {
      messageId,
      turnId,
      content,
      at,
      ...replacing,
      ...(context ? { context } : {}),
      ...withRequest(request),
    },
  };
  const forUser = user ? { user } : {};
  const intent = intentOf(classified ?? {});
  const started: ConversationEvent = {
    type: 'TurnStarted',
    data: { turnId, agent, role, at, ...intent, ...replacing, ...forUser },
  };
  if (!state.turn) return [added, started];
  switch (ifBusy) {
    case 'reject':
      throw new ConversationConflictError('a turn is already running', { turnId: state.turn.turnId });
    case 'enqueue':
      return [
        added,
        { type: 'TurnQueued', data: { turnId, messageId, agent, role, at, ...intent, ...forUser } },
      ];
    case 'interrupt':
      return [...cancelTurn(state, state.turn, by, at), added, started];
  }
};

/** The turn a model output is recorded for: running, not waiting for tools, with a step left. */
const requireStepDue = (state: Conversation, command: CommandOf<'RecordModelOutput'>): CurrentTurn => {
  const turn = requireTurn(state, command.turnId);
  if (turn.toolCalls.some((c) => c.state !== 'completed')) {
    throw new ConversationConflictError('the turn is waiting for tool results', { turnId: turn.turnId });
  }
  if (turn.step >= turn.agent.maxSteps) {
    throw new ConversationConflictError('the turn has used all its steps', { turnId: turn.turnId });
  }
  if (command.step !== turn.step + 1) {
    throw new ConversationConflictError(`step ${command.step} is already recorded`, {
      turnId: turn.turnId,
      step: turn.step,
    });
  }
  return turn;
};

/** The instant `timeoutMs` after `at`: a client call's deadline (plain arithmetic, no clock). */
const deadlineAfter = (at: string, timeoutMs: number): string =>
  new Date(Date.parse(at) + timeoutMs).toISOString();

/** A client call's ToolCallRequested fields; its deadline runs from now unless a person approves first. */
const clientCallFields = (
  client: { timeoutMs: number } | undefined,
  approvalRequired: boolean,
  at: string,
): { executor?: 'client'; timeoutMs?: number; deadline?: string } =>
  client
    ? {
        executor: 'client',
        timeoutMs: client.timeoutMs,
        ...(approvalRequired ? {} : { deadline: deadlineAfter(at, client.timeoutMs) }),
      }
    : {};

/** Why a call past the agent's step limit is not run. */
const maxStepsError = (turn: CurrentTurn): EventError => ({
  code: 'max_steps',
  message: `not run: the turn reached its limit of ${turn.agent.maxSteps} steps`,
});

/** What a requested call carries besides its arguments: its tool's `affects`, a sub-agent call's child. */
const requestedExtras = ({
  affects,
  childConversationId,
}: {
  affects?: string[];
  childConversationId?: string;
}) => ({
  ...(affects ? { affects } : {}),
  ...(childConversationId ? { childConversationId } : {}),
});

/** The events of the tool calls one model step asked for: refused ones completed at once, others requested. */
const toolCallEvents = (
  command: CommandOf<'RecordModelOutput'>,
  turn: CurrentTurn,
  outOfSteps: boolean,
  metadata?: Record<string, string>,
): ConversationEvent[] => {
  const { turnId, approvalIds, at } = command;
  // Webhook and MCP calls carry the turn's end user and the conversation's metadata (API.md).
  const caller = { ...(turn.user ? { user: turn.user } : {}), ...(metadata ? { metadata } : {}) };
  return command.toolCalls.flatMap(({ toolCallId, name, args, verdict }): ConversationEvent[] => {
    if (outOfSteps || verdict.kind === 'refuse') {
      const error = verdict.kind === 'refuse' && !outOfSteps ? verdict.error : maxStepsError(turn);
      // Refused: never requested of the tools service; its result is the refusal the model reads.
      return [{ type: 'ToolCallCompleted', data: { turnId, toolCallId, name, ok: false, error, at } }];
    }
    const approvalRequired = verdict.approval === 'always';
    const extras = { ...requestedExtras(verdict), ...clientCallFields(verdict.client, approvalRequired, at) };
    const requested: ConversationEvent = {
      type: 'ToolCallRequested',
      data: { turnId, toolCallId, name, args, approvalRequired, ...extras, ...caller, at },
    };
    if (!approvalRequired && !verdict.passedByPolicy) return [requested];
    const approvalId = approvalIds[toolCallId];
    if (!approvalId) throw new ValidationError(`no approval id for tool call ${toolCallId}`);
    if (!approvalRequired) {
      // The policy's `when` let it through: recorded so the stream says who decided.
      return [
        requested,
        { type: 'ApprovalDecidedByPolicy', data: { turnId, approvalId, toolCallId, name, at } },
      ];
    }
    return [
      requested,
      {
        type: 'ApprovalRequested',
        data: {
          turnId,
          approvalId,
          toolCallId,
          name,
          args,
          ...(verdict.approvalMessage === undefined ? {} : { message: verdict.approvalMessage }),
          requestedAt: at,
        },
      },
    ];
  });
};

const recordModelOutput = (
  command: CommandOf<'RecordModelOutput'>,
  state: Conversation,
): ConversationEvent[] => {
  requireExists(state);
  const turn = requireStepDue(state, command);
  const { turnId, messageId, text, toolCalls, usage, at } = command;
  const step = turn.step + 1;
  const events: ConversationEvent[] = [
    {
      type: 'AssistantMessageCompleted',
      data: {
        turnId,
        step,
        messageId,
        text,
        toolCalls: toolCalls.map(({ toolCallId, name, args }) => ({ toolCallId, name, args })),
        at,
      },
    },
    { type: 'UsageRecorded', data: { turnId, step, ...usage, at } },
  ];
  if (toolCalls.length === 0) {
    const affected = affectedBy(turn);
    return [
      ...events,
      { type: 'TurnCompleted', data: { turnId, finishReason: 'stop', affected, at } },
      ...startNextQueued(applied(events, state), at),
    ];
  }
  const calls = toolCallEvents(command, turn, step >= turn.agent.maxSteps, state.metadata);
  return afterToolCalls(state, [...events, ...calls], at);
};

const decideApproval = (command: CommandOf<'DecideApproval'>, state: Conversation): ConversationEvent[] => {
  requireExists(state);
  if (acceptedBefore(state, command.request, 'approval')) return [];
  const { approvalId, decision, by, reason, request, at } = command;
  const pending = state.pendingApprovals.find((a) => a.approvalId === approvalId);
  if (!pending) {
    if (state.decidedApprovals.includes(approvalId)) {
      throw new ConversationConflictError('approval already decided', { approvalId });
    }
    throw new NotFoundError('approval not found', { details: { approvalId } });
  }
  const { turnId, toolCallId, tool } = pending;
  const call = state.turn?.toolCalls.find((c) => c.toolCallId === toolCallId);
  // An approved client call runs from now: its deadline starts with the approval.
  const clientDeadline =
    decision === 'approve' && call?.executor === 'client' && call.timeoutMs !== undefined
      ? { deadline: deadlineAfter(at, call.timeoutMs) }
      : {};
  const decided: ConversationEvent = {
    type: 'ApprovalDecided',
    data: {
      turnId,
      approvalId,
      toolCallId,
      decision,
      by,
      ...(reason ? { reason } : {}),
      at,
      ...withRequest(request),
      ...clientDeadline,
    },
  };
  if (decision === 'approve') return [decided];
  const message = `denied by ${by}${reason ? `: ${reason}` : ''}`;
  const denied: ConversationEvent = {
    type: 'ToolCallCompleted',
    data: { turnId, toolCallId, name: tool, ok: false, error: { code: 'denied', message }, at },
  };
  return afterToolCalls(state, [decided, denied], at);
};

const recordToolResult = (
  command: CommandOf<'RecordToolResult'>,
  state: Conversation,
): ConversationEvent[] => {
  requireExists(state);
  const call = state.turn?.toolCalls.find((c) => c.toolCallId === command.toolCallId);
  // A result for a call that is done, or of a turn that ended (cancelled), changes nothing.
  if (!state.turn || !call || call.state === 'completed') return [];
  if (call.state === 'awaiting_approval') {
    throw new ConversationConflictError('tool call ran before its approval', { toolCallId: call.toolCallId });
  }
  return completeCall(state, state.turn, call, command);
};

/** The result of a call the turn waits for, and the phase change a success makes. */
const completeCall = (
  state: Conversation,
  turn: CurrentTurn,
  call: TurnToolCall,
  outcome: { ok: boolean; result?: unknown; error?: EventError; at: string },
): ConversationEvent[] => {
  const { toolCallId } = call;
  const { ok, result, error, at } = outcome;
  const { turnId } = turn;
  const phases = turn.agent.phases;
  const from = state.phase ?? phases?.initial;
  const to = ok && phases ? nextPhase(phases, from, call.name) : from;
  const phaseChange: ConversationEvent[] =
    from !== undefined && to !== undefined && to !== from
      ? [{ type: 'PhaseChanged', data: { turnId, from, to, toolCallId, at } }]
      : [];
  const recorded = ok ? { result } : { error: error ?? { code: 'tool_error', message: 'the tool failed' } };
  const completed: ConversationEvent = {
    type: 'ToolCallCompleted',
    data: { turnId, toolCallId, name: call.name, ok, ...recorded, at },
  };
  return afterToolCalls(state, [completed, ...phaseChange], at);
};

/**
 * The client's answer to a client call: the first of answer and timeout wins. Unknown (or not
 * a client call): not found; answered, timed out, not yet approved, or past its deadline: conflict.
 */
const submitToolResult = (
  command: CommandOf<'SubmitToolResult'>,
  state: Conversation,
): ConversationEvent[] => {
  requireExists(state);
  const { toolCallId, at } = command;
  const call = state.turn?.toolCalls.find((c) => c.toolCallId === toolCallId && c.executor === 'client');
  if (!state.turn || !call) {
    const seen = state.messages.some((m) => m.role === 'tool' && m.toolCallId === toolCallId);
    if (seen) throw new ConversationConflictError('the tool call was answered already', { toolCallId });
    throw new NotFoundError('tool call not found', { details: { toolCallId } });
  }
  if (call.state === 'completed') {
    throw new ConversationConflictError('the tool call was answered already', { toolCallId });
  }
  if (call.state === 'awaiting_approval' || call.deadline === undefined) {
    throw new ConversationConflictError('the tool call awaits its approval', { toolCallId });
  }
  if (Date.parse(at) >= Date.parse(call.deadline)) {
    throw new ConversationConflictError('the tool call is past its deadline', { toolCallId });
  }
  return completeCall(state, state.turn, call, command);
};

/**
 * A client call's deadline came: it times out, once. Answered already, or not due (a clock
 * behind the deadline's), or no such call: nothing.
 */
const expireClientCall = (
  command: CommandOf<'ExpireClientCall'>,
  state: Conversation,
): ConversationEvent[] => {
  const { toolCallId, at } = command;
  const call = state.turn?.toolCalls.find((c) => c.toolCallId === toolCallId && c.executor === 'client');
  if (!state.turn || !call || call.state !== 'requested' || call.deadline === undefined) return [];
  if (Date.parse(at) < Date.parse(call.deadline)) return [];
  const message = `the client did not answer by ${call.deadline}`;
  return completeCall(state, state.turn, call, { ok: false, error: { code: 'timeout', message }, at });
};

/**
 * A descendant's approval request, shown in this stream once, while the sub-agent call it came
 * through is open; after that (the call ended, or it was shown already) nothing is recorded.
 */
const recordChildApproval = (
  command: CommandOf<'RecordChildApproval'>,
  state: Conversation,
): ConversationEvent[] => {
  requireExists(state);
  const { approval } = command;
  const call = state.turn?.toolCalls.find((c) => c.toolCallId === approval.toolCallId);
  if (!call?.childConversationId || call.state === 'completed') return [];
  if (call.childApprovals?.includes(approval.approvalId)) return [];
  return [{ type: 'ChildApprovalRequested', data: { ...approval, turnId: state.turn!.turnId } }];
};

const failTurn = (command: CommandOf<'FailTurn'>, state: Conversation): ConversationEvent[] => {
  requireExists(state);
  const turn = requireTurn(state, command.turnId);
  const { error, at } = command;
  return [
    ...closeOpenCalls(turn, { code: 'turn_failed', message: 'not run: the turn failed' }, at),
    { type: 'TurnFailed', data: { turnId: turn.turnId, error, at } },
    ...startNextQueued(state, at),
  ];
};

const cancelCurrentTurn = (command: CommandOf<'CancelTurn'>, state: Conversation): ConversationEvent[] => {
  requireExists(state);
  if (acceptedBefore(state, command.request, 'cancel')) return [];
  if (!state.turn) throw new ConversationConflictError('no turn is running');
  const cancelled = cancelTurn(state, state.turn, command.by, command.at, command.request);
  return [...cancelled, ...startNextQueued(state, command.at)];
};

/**
 * PATCH: the title and/or metadata that differ from the conversation's (metadata replaces the
 * whole map). Nothing given is refused naming `title`; nothing different appends nothing.
 */
const updateConversation = (
  command: CommandOf<'UpdateConversation'>,
  state: Conversation,
): ConversationEvent[] => {
  requireExists(state);
  const { title, metadata, by, at } = command;
  if (title === undefined && metadata === undefined) {
    throw new ValidationError('give title or metadata to change', { field: 'title' });
  }
  if (title !== undefined) checkTitle(title);
  if (metadata !== undefined) checkMetadata(metadata);
  const newTitle = title !== undefined && title !== state.title ? { title } : {};
  const same =
    JSON.stringify(sortedEntries(metadata)) === JSON.stringify(sortedEntries(state.metadata ?? {}));
  const newMetadata = metadata !== undefined && !same ? { metadata: { ...metadata } } : {};
  if (Object.keys(newTitle).length + Object.keys(newMetadata).length === 0) return [];
  return [{ type: 'ConversationUpdated', data: { ...newTitle, ...newMetadata, by, at } }];
};

const sortedEntries = (map: Record<string, string> | undefined): Array<[string, string]> =>
  Object.entries(map ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

/** A rating of a message of the current branch; another message: not found. */
const giveFeedback = (command: CommandOf<'GiveFeedback'>, state: Conversation): ConversationEvent[] => {
  requireExists(state);
  const { messageId, rating, comment, by, at } = command;
  const message = state.messages.find((m) => m.id === messageId);
  if (!message) throw new NotFoundError('message not found', { details: { messageId } });
  const previous = message.feedback?.rating;
  return [
    {
      type: 'FeedbackGiven',
      data: {
        messageId,
        rating,
        ...(comment ? { comment } : {}),
        ...(previous ? { previous } : {}),
        agentId: state.agentId,
        by,
        at,
      },
    },
  ];
};

/**
 * The auto title's call, recorded once per conversation: its usage (step 0, outside the turn's
 * steps) and, unless a person titled the conversation meanwhile, the title. A second recording
 * (a redelivered trigger on another instance) appends nothing.
 */
const recordAutoTitle = (command: CommandOf<'RecordAutoTitle'>, state: Conversation): ConversationEvent[] => {
  requireExists(state);
  if (state.autoTitledAfter !== undefined) return [];
  const { turnId, usage, at } = command;
  const title = command.title.trim().slice(0, MAX_TITLE_CHARS);
  const used: ConversationEvent = { type: 'UsageRecorded', data: { turnId, step: 0, ...usage, at } };
  if (state.title !== undefined || title === '') return [used];
  return [{ type: 'ConversationUpdated', data: { title, by: 'system:agent', auto: { turnId }, at } }, used];
};

/** The conversation aggregate's decisions: pure, no I/O, ids and times come in the commands. */
export const decide = (command: ConversationCommand, state: Conversation): ConversationEvent[] => {
  switch (command.type) {
    case 'CreateConversation':
      return createConversation(command, state);
    case 'SubmitMessage':
      return submitMessage(command, state);
    case 'RecordModelOutput':
      return recordModelOutput(command, state);
    case 'DecideApproval':
      return decideApproval(command, state);
    case 'RecordToolResult':
      return recordToolResult(command, state);
    case 'SubmitToolResult':
      return submitToolResult(command, state);
    case 'ExpireClientCall':
      return expireClientCall(command, state);
    case 'RecordChildApproval':
      return recordChildApproval(command, state);
    case 'FailTurn':
      return failTurn(command, state);
    case 'CancelTurn':
      return cancelCurrentTurn(command, state);
    case 'UpdateConversation':
      return updateConversation(command, state);
    case 'GiveFeedback':
      return giveFeedback(command, state);
    case 'RecordAutoTitle':
      return recordAutoTitle(command, state);
    default: {
      const unknown: never = command;
      throw new ValidationError(`unknown command ${String((unknown as { type: unknown }).type)}`);
    }
  }
};

const cancelTurn = (
  state: Conversation,
  turn: CurrentTurn,
  by: string,
  at: string,
  request?: AcceptedRequest,
): ConversationEvent[] => {
  const withdrawn = state.pendingApprovals.filter((a) => a.turnId === turn.turnId).map((a) => a.approvalId);
  return [
    ...closeOpenCalls(turn, { code: 'cancelled', message: `not run: the turn was cancelled by ${by}` }, at),
    {
      type: 'TurnCancelled',
      data: { turnId: turn.turnId, by, withdrawnApprovals: withdrawn, at, ...withRequest(request) },
    },
  ];
};

/** The conversation aggregate. */
export const conversationDecider: Decider<Conversation, ConversationCommand, ConversationEvent> = {
  initialState: initialConversation,
  decide,
  evolve,
};
