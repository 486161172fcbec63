import type { EventBus, EventStore } from '@keel/core';
import { ConcurrencyError, NotFoundError, asDecided, ownValue, streamName, uuidv7 } from '@keel/core';
import type {
  AcceptedRequest,
  AgentDefinition,
  AgentSnapshot,
  ConversationEvent,
  EventError,
  FeedbackRating,
  ParentLink,
  TenantDefaults,
  TurnIntent,
} from '@keel/events';
import { CONVERSATION_CATEGORY, turnIdOf } from '@keel/events';
import type { TurnBudgets } from '../budget/turn-budgets.js';
import type {
  ConversationFilter,
  ConversationIndex,
  ConversationPage,
  IndexedConversation,
} from '../conversation-index/conversation-index.js';
import type { ConversationCommand, IfBusy } from './conversation.commands.js';
import { ConversationConflictError, conversationDecider } from './conversation.decider.js';
import type { Conversation, PendingClientCall, TurnToolCall } from './conversation.state.js';
import { acceptedRequest, pendingClientCalls } from './conversation.state.js';
import { classifyIntent } from '../turn/intents.js';
import { withDefaults } from '../models/agent-defaults.js';
import type { Entity } from '../turn/working-memory.js';
import { entitiesOfConversation } from '../turn/working-memory.js';
import { CachingCommandHandler } from '../store/caching-command-handler.js';
import type { CallContext } from '../call-context.js';
import { eventMetadata } from '../call-context.js';
import type { TenantConfigService } from '../tenant-config/tenant-config.service.js';
import { checkContext, contextOf, endUserOf } from './message-context.js';

/** The conversation as the API shows it (API.md `GET /v1/conversations/{id}`). */
export interface ConversationView {
  id: string;
  agentId: string;
  status: 'idle' | 'running' | 'awaiting_approval' | 'awaiting_client' | 'failed';
  version: number;
  createdAt: string;
  /** The title given at creation, if any. */
  title?: string;
  /** The metadata given at creation or by PATCH since, if any. */
  metadata?: Record<string, string>;
  /** The acting user who created it; absent when not recorded. */
  userId?: string;
  /** The agent phase it is in, when its agent has phases. */
  phase?: string;
  /** A sub-agent's child conversation: the conversation whose tool call runs it. */
  parentConversationId?: string;
  messages: Conversation['messages'];
  pendingApprovals: Array<{
    approvalId: string;
    toolCallId: string;
    tool: string;
    args: unknown;
    requestedAt: string;
  }>;
  /** Client tool calls the client is to answer, in the order asked (API `pendingClientCalls`). */
  pendingClientCalls: PendingClientCall[];
  usage: { promptTokens: number; completionTokens: number; costUsd: number };
  /** The prompt fill of the last model call in tokens; 0 before any. */
  contextTokens: number;
  /** The working memory: entities its tool results named, latest first, at most 50. */
  entities: Array<Pick<Entity, 'type' | 'id' | 'label'>>;
}

/** A sub-agent call's child conversation: its id (derived from the call) and its parent link. */
export interface ChildOf {
  conversationId: string;
  parent: ParentLink;
}

/** A conversation of the tenant's list, with its current status. */
export interface ListedConversation {
  id: string;
  agentId: string;
  title?: string;
  userId?: string;
  metadata?: Record<string, string>;
  status: ConversationView['status'];
  createdAt: string;
}

/** What the service needs besides the store, the bus and the configuration. */
export interface ConversationServiceOptions {
  /** The per-tenant list; `create` records into it at once (the projection would later anyway). */
  index?: ConversationIndex;
  /** Told when that immediate write fails (the projection still records the conversation). */
  onIndexError?: (error: unknown, entry: { tenantId: string; conversationId: string }) => void;
  clock?: () => string;
  /** The tenants' monthly budgets: a new turn is admitted only within its tenant's budget. */
  budgets?: TurnBudgets;
  /** The tenants' defaults (`PUT /v1/defaults`): a turn starts with those its agent takes. */
  defaults?: { load(tenantId: string): Promise<TenantDefaults> };
  /**
   * Makes a conversation's data key (the key its content is sealed with, KEEL_MASTER_KEY) when it
   * is created: a conversation created without a title has no sealed content yet, so without
   * this its first message would wait for the key's insert before its TurnStarted commit.
   */
  makeDataKey?: (tenantId: string, conversationId: string) => Promise<unknown>;
  /** Snapshot every this many events (default `SNAPSHOT_EVERY`); tests take them sooner. */
  snapshotEvery?: number;
}

/**
 * Snapshot the conversation every this many events (a cache: deleting snapshots changes nothing).
 * A snapshot is the whole state, messages included, so its size grows with the conversation:
 * taken every 20 events it wrote more than the events themselves (quadratic bytes: 748 KB of
 * snapshots for an 80-step turn's 225 KB of commits). A load without the process's cached state
 * reads the events after the snapshot a bucket of 64 versions per query on FerretDB/PostgreSQL,
 * and folding 512 events takes about a millisecond: so a snapshot per 512 events, none in a turn
 * of up to ~120 tool steps.
 */
const SNAPSHOT_EVERY = 512;

/**
 * Category of the streams that bind a create request's Idempotency-Key to the conversation it
 * created: `conversation_key-<AcceptedRequest.key>`, one `ConversationKeyClaimed` event each.
 */
export const CONVERSATION_KEY_CATEGORY = 'conversation_key';

/** The one event of a `conversation_key` stream: this key's create request made this conversation. */
export interface ConversationKeyClaimed {
  type: 'ConversationKeyClaimed';
  data: { conversationId: string; hash: string; at: string };
}

/**
 * A submit that found its request already accepted (a retry racing the first, decided after the
 * first's append): thrown through the budget admission so the new reservation is given back.
 */
class AlreadyAccepted extends Error {
  constructor(readonly state: Conversation) {
    super('the request was accepted before');
  }
}

/**
 * The agent as the turn starts with it (API `turn.started`): the fields it takes from the
 * tenant's defaults as they are now, and the intent `content` matches, recorded with its
 * definition, so neither a later default nor an edit of the intents changes the running turn.
 */
const turnStartOf = (
  content: string,
  agent: AgentDefinition,
): { agent: AgentSnapshot; classified?: TurnIntent } => {
  const matched = classifyIntent(content, agent.options?.intents);
  const snapshot: AgentSnapshot = {
    agentId: agent.agentId,
    model: agent.model,
    maxSteps: agent.maxSteps,
    temperature: agent.temperature,
    ...(agent.phases ? { phases: agent.phases } : {}),
    ...(matched ? { matchedIntent: matched.intent } : {}),
  };
  if (!matched) return { agent: snapshot };
  return { agent: snapshot, classified: { intent: matched.intent.name, confidence: matched.confidence } };
};

/** A message as sent: its fields, its context parsed, the end user it speaks for. */
interface Message {
  content: string;
  ifBusy?: IfBusy;
  replaceFrom?: string;
  context: ReturnType<typeof contextOf>;
  user: ReturnType<typeof endUserOf>;
}

/**
 * Whether the caller of a request still waits for its answer, as `AbortSignal.throwIfAborted`
 * says it: throws (the caller's own error: a passed deadline, a cancelled call) once it does not.
 */
export type CallerWaiting = Pick<AbortSignal, 'throwIfAborted'>;

/** An answer decided on a remembered state that only a fresh load may give (see `send`). */
class Unconfirmed extends Error {
  constructor() {
    super('decided on a remembered state: to be confirmed on a fresh load');
  }
}

const sameRequestConflict = (): ConversationConflictError =>
  new ConversationConflictError('Idempotency-Key was already used with a different request', {
    field: 'Idempotency-Key',
  });

/** The conversation use cases: create, send, approve or deny, cancel, read, record tool results. */
export class ConversationService {
  readonly handler: CachingCommandHandler<Conversation, ConversationCommand, ConversationEvent>;
  private readonly clock: () => string;

  constructor(
    private readonly store: EventStore,
    private readonly bus: EventBus,
    private readonly config: TenantConfigService,
    private readonly options: ConversationServiceOptions = {},
  ) {
    this.clock = options.clock ?? (() => new Date().toISOString());
    // Remembers the conversations this process works on: a load reads only the newer events.
    this.handler = new CachingCommandHandler(store, conversationDecider, {
      // v3: the state counts its version and keeps the accepted requests (v2 snapshots lack them).
      // v4: the state keeps the metadata given at creation (v3 snapshots lack it).
      // v5: the creator's userId, ratings on messages, the auto title's turn (v4 snapshots lack them).
      snapshot: { name: 'conversation-v5', every: options.snapshotEvery ?? SNAPSHOT_EVERY },
    });
  }

  /**
   * Creates a conversation. With `request` (an Idempotency-Key) a retry, after any failure and
   * on any instance, answers the conversation the first request created instead of a second one.
   */
  async create(
    ctx: CallContext,
    input: {
      agentId: string;
      title?: string;
      metadata?: Record<string, string>;
      child?: ChildOf;
      /** Agents offered as sub-agents besides the agent's own (a hierarchical run's manager). */
      delegates?: string[];
    },
    request?: AcceptedRequest,
  ) {
    await this.agent(ctx.tenantId, input.agentId);
    const at = this.clock();
    const conversationId = await this.newConversationId(ctx, input.child, request, at);
    const result = await this.run(ctx, conversationId, {
      type: 'CreateConversation',
      conversationId,
      agentId: input.agentId,
      ...(input.title ? { title: input.title } : {}),
      ...(input.metadata ? { metadata: input.metadata } : {}),
      userId: ctx.userId,
      ...(input.child ? { parent: input.child.parent } : {}),
      ...(input.delegates ? { delegates: input.delegates } : {}),
      ...(request ? { request } : {}),
      at,
    });
    const { createdAt, userId, metadata } = result.state;
    const entry = {
      agentId: input.agentId,
      ...(input.title ? { title: input.title } : {}),
      createdAt,
      ...(userId ? { userId } : {}),
      ...(metadata ? { metadata } : {}),
      status: 'idle' as const,
    };
    await Promise.all([
      this.index(ctx.tenantId, conversationId, entry),
      this.makeDataKey(ctx, conversationId),
    ]);
    return { id: conversationId, agentId: input.agentId, status: 'idle' as const, createdAt };
  }

  /**
   * The id a new conversation gets: a sub-agent's child has the one its parent's call derived (a
   * repeat finds it created), a keyed request the one its key is bound to, else a fresh one. An id
   * made up here names no stream yet, so its creation appends with no read of it.
   */
  private async newConversationId(
    ctx: CallContext,
    child: ChildOf | undefined,
    request: AcceptedRequest | undefined,
    at: string,
  ): Promise<string> {
    const { conversationId, minted } = child
      ? { conversationId: child.conversationId, minted: false }
      : request
        ? await this.claimConversationId(ctx, request, at)
        : { conversationId: uuidv7(), minted: true };
    if (minted) this.handler.rememberEmpty(ctx.tenantId, this.stream(conversationId));
    return conversationId;
  }

  /**
   * Adds a user message; returns the turn it started or queued, and the conversation's version
   * just before the message (every event of the turn comes after it). With `request` (an
   * Idempotency-Key) the conversation's log answers a retry: the first request's turn and
   * version, with nothing appended, nothing reserved and no second turn run.
   *
   * When this process remembers the conversation, the message is decided on that state with no
   * read: its append at that version is the check (a log that moved refuses it, and it is
   * decided again on a fresh load). What the remembered state alone would answer (not found, a
   * replay, a conflict, a refusal) is never answered from it: it is asked again of a fresh load.
   *
   * `waiting` (the gRPC call's deadline and cancellation): a message whose caller no longer waits
   * is not committed. It is asked right before the append (and before the loads and the budget's
   * reservation when already gone), so a caller told its deadline passed, and retrying, gets no
   * turn it was never told of; it throws the caller's error, with nothing written (a reservation
   * already made is given back). A commit whose answer reaches the caller after its deadline is
   * the one outcome left unknown to it (`waiting` stops commits a margin before the deadline to
   * make it rare): its Idempotency-Key retry answers that turn.
   */
  async send(
    ctx: CallContext,
    conversationId: string,
    input: {
      content: string;
      ifBusy?: IfBusy;
      replaceFrom?: string;
      contextJson?: string;
      userRole?: string;
    },
    request?: AcceptedRequest,
    waiting?: CallerWaiting,
  ): Promise<{ turnId: string; version: number }> {
    waiting?.throwIfAborted();
    const message: Message = {
      content: input.content,
      ...(input.ifBusy ? { ifBusy: input.ifBusy } : {}),
      ...(input.replaceFrom ? { replaceFrom: input.replaceFrom } : {}),
      context: contextOf(input.contextJson ?? ''),
      user: endUserOf(ctx.userId, input.userRole ?? ''),
    };
    const remembered = this.handler.remembered(ctx.tenantId, this.stream(conversationId));
    if (remembered) {
      try {
        const on = { ...remembered, fresh: false };
        return await this.submit(ctx, conversationId, on, message, request, waiting);
      } catch (error) {
        if (!(error instanceof Unconfirmed)) throw error;
      }
    }
    waiting?.throwIfAborted();
    const loaded = await this.handler.load(ctx.tenantId, this.stream(conversationId));
    return this.submit(ctx, conversationId, { ...loaded, fresh: true }, message, request, waiting);
  }

  async decideApproval(
    ctx: CallContext,
    conversationId: string,
    approvalId: string,
    input: { decision: 'approve' | 'deny'; reason?: string },
    request?: AcceptedRequest,
  ) {
    // A retry of an accepted decision (same Idempotency-Key and request) appends nothing.
    await this.run(ctx, conversationId, {
      type: 'DecideApproval',
      approvalId,
      decision: input.decision,
      by: ctx.userId,
      ...(input.reason ? { reason: input.reason } : {}),
      ...(request ? { request } : {}),
      at: this.clock(),
    });
    return { approvalId, decision: input.decision };
  }

  /**
   * Cancels the running turn and tells whichever agent instance runs its model call to abort it.
   * A retry of an accepted cancel (same Idempotency-Key) cancels nothing more and answers the
   * turn it cancelled (the abort is told again: the first one may have died with its process).
   */
  async cancel(
    ctx: CallContext,
    conversationId: string,
    request?: AcceptedRequest,
  ): Promise<{ turnId: string }> {
    const result = await this.run(ctx, conversationId, {
      type: 'CancelTurn',
      by: ctx.userId,
      ...(request ? { request } : {}),
      at: this.clock(),
    });
    const cancelled = result.events.find((e) => e.type === 'TurnCancelled');
    const first = request ? acceptedRequest(result.state, request.key) : undefined;
    const turnId =
      (cancelled ? turnIdOf(cancelled) : undefined) ?? (first?.kind === 'cancel' ? first.turnId : '');
    this.bus.ephemeral.publish({ kind: 'cancel', tenantId: ctx.tenantId, conversationId }, { turnId });
    return { turnId };
  }

  /**
   * Records the client's answer to a client call (API `POST …/tool-results/{toolCallId}`).
   * `checkResult` sees a successful answer with its tool's name first (the tool's outputSchema,
   * a ValidationError naming the field): a refused answer writes nothing. The decider answers
   * unknown calls (not found) and late or second answers (conflict).
   */
  async submitToolResult(
    ctx: CallContext,
    conversationId: string,
    input: { toolCallId: string; ok: boolean; result?: unknown; error?: EventError },
    checkResult: (tool: string, result: unknown) => Promise<void>,
  ): Promise<{ toolCallId: string }> {
    if (input.ok) {
      const call = await this.requestedClientCall(ctx.tenantId, conversationId, input.toolCallId);
      if (call) await checkResult(call.name, input.result);
    }
    await this.run(ctx, conversationId, {
      type: 'SubmitToolResult',
      ...input,
      by: ctx.userId,
      at: this.clock(),
    });
    return { toolCallId: input.toolCallId };
  }

  /**
   * The client call `toolCallId` when the conversation waits for its answer. As this process
   * remembers it when that says so, with no read (a state can only be behind the log: a call it
   * shows requested was requested; if answered since, the decider refuses the answer); else as
   * the log has it now (the call may have been requested elsewhere).
   */
  private async requestedClientCall(
    tenantId: string,
    conversationId: string,
    toolCallId: string,
  ): Promise<TurnToolCall | undefined> {
    const requested = (state: Conversation | undefined) =>
      state?.turn?.toolCalls.find(
        (c) => c.toolCallId === toolCallId && c.executor === 'client' && c.state === 'requested',
      );
    const stream = this.stream(conversationId);
    return (
      requested(this.handler.remembered(tenantId, stream)?.state) ??
      requested((await this.handler.load(tenantId, stream)).state)
    );
  }

  /** Records a tool's outcome (from the tools service's ToolCallExecuted event). */
  async recordToolResult(
    ctx: CallContext,
    conversationId: string,
    input: { toolCallId: string; ok: boolean; result?: unknown; error?: EventError },
  ) {
    return this.run(ctx, conversationId, { type: 'RecordToolResult', ...input, at: this.clock() });
  }

  async get(tenantId: string, conversationId: string): Promise<ConversationView> {
    const { state, version } = await this.handler.load(tenantId, this.stream(conversationId));
    if (state.status === 'new') throw new NotFoundError('conversation not found');
    return {
      id: state.id,
      agentId: state.agentId,
      status: state.status,
      version,
      createdAt: state.createdAt,
      ...(state.title ? { title: state.title } : {}),
      ...(state.metadata ? { metadata: state.metadata } : {}),
      ...(state.userId ? { userId: state.userId } : {}),
      ...(await this.phaseOf(tenantId, state)),
      ...(state.parent ? { parentConversationId: state.parent.conversationId } : {}),
      messages: state.messages,
      pendingApprovals: state.pendingApprovals.map(({ approvalId, toolCallId, tool, args, requestedAt }) => ({
        approvalId,
        toolCallId,
        tool,
        args,
        requestedAt,
      })),
      pendingClientCalls: pendingClientCalls(state),
      usage: {
        promptTokens: state.usage.promptTokens,
        completionTokens: state.usage.completionTokens,
        costUsd: state.usage.costUsd,
      },
      contextTokens: state.contextTokens ?? 0,
      entities: await this.entities(tenantId, state),
    };
  }

  /** The conversation's working memory, under its tools' memory declarations as configured now. */
  private async entities(tenantId: string, state: Conversation): Promise<ConversationView['entities']> {
    if (!state.messages.some((m) => m.role === 'tool')) return [];
    const { tools } = await this.config.load(tenantId);
    const found = entitiesOfConversation(state.messages, (name) => ownValue(tools, name)?.memory);
    return found.map(({ type, id, label }) => ({ type, id, ...(label === undefined ? {} : { label }) }));
  }

  /**
   * One page of the tenant's conversations, newest first, each with its status from the log.
   * Without an index (a service built for a test) the list is empty.
   */
  async list(
    tenantId: string,
    page: { limit?: number; cursor?: string } = {},
    filter: ConversationFilter = {},
  ): Promise<{ conversations: ListedConversation[]; nextCursor?: string }> {
    const found: ConversationPage = this.options.index
      ? await this.options.index.list(tenantId, page, filter)
      : { conversations: [] };
    const conversations = await Promise.all(
      found.conversations.map(async (entry): Promise<ListedConversation> => {
        const { state } = await this.handler.load(tenantId, this.stream(entry.conversationId));
        return {
          id: entry.conversationId,
          agentId: entry.agentId,
          ...(entry.title ? { title: entry.title } : {}),
          ...(entry.userId ? { userId: entry.userId } : {}),
          ...(entry.metadata ? { metadata: entry.metadata } : {}),
          status: state.status === 'new' ? 'idle' : state.status,
          createdAt: entry.createdAt,
        };
      }),
    );
    return { conversations, ...(found.nextCursor ? { nextCursor: found.nextCursor } : {}) };
  }

  /**
   * PATCH: sets the title and/or replaces the metadata (`conversation.updated`), then answers the
   * conversation. A bad field is refused naming it, nothing written; no change appends nothing.
   */
  async update(
    ctx: CallContext,
    conversationId: string,
    input: { title?: string; metadata?: Record<string, string> },
  ): Promise<ConversationView> {
    await this.run(ctx, conversationId, {
      type: 'UpdateConversation',
      ...input,
      by: ctx.userId,
      at: this.clock(),
    });
    return this.get(ctx.tenantId, conversationId);
  }

  /** Rates a message of the conversation's current branch; an unknown message: not found. */
  async feedback(
    ctx: CallContext,
    conversationId: string,
    input: { messageId: string; rating: FeedbackRating; comment?: string },
  ): Promise<{ messageId: string; rating: FeedbackRating }> {
    await this.run(ctx, conversationId, { type: 'GiveFeedback', ...input, by: ctx.userId, at: this.clock() });
    return { messageId: input.messageId, rating: input.rating };
  }

  /** The phase a conversation is in, when its agent has phases (the initial one until a change). */
  private async phaseOf(tenantId: string, state: Conversation): Promise<{ phase?: string }> {
    if (state.phase !== undefined) return { phase: state.phase };
    const agent = ownValue((await this.config.load(tenantId)).agents, state.agentId);
    return agent?.phases ? { phase: agent.phases.initial } : {};
  }

  /** Runs a command against a conversation stream with the call's metadata on every event. */
  run(ctx: CallContext, conversationId: string, command: ConversationCommand) {
    return this.handler.handle(ctx.tenantId, this.stream(conversationId), command, {
      metadata: eventMetadata(ctx),
    });
  }

  stream(conversationId: string): string {
    return streamName(CONVERSATION_CATEGORY, conversationId);
  }

  /**
   * Sends `message` decided on `on.state`. On a state not `fresh` (remembered), an answer that
   * state alone would give throws Unconfirmed instead (the caller asks a fresh load); an append
   * that succeeds, or an answer decided after a refused append, is the log's own.
   */
  private async submit(
    ctx: CallContext,
    conversationId: string,
    on: { state: Conversation; fresh: boolean },
    message: Message,
    request: AcceptedRequest | undefined,
    waiting: CallerWaiting | undefined,
  ): Promise<{ turnId: string; version: number }> {
    const { state, fresh } = on;
    const accepted = request && acceptedRequest(state, request.key);
    if (!fresh && (state.status === 'new' || accepted)) throw new Unconfirmed();
    if (state.status === 'new') throw new NotFoundError('conversation not found');
    const replayed = request && this.acceptedTurn(state, request);
    if (replayed) return replayed;
    const command = await this.messageCommand(ctx, state.agentId, message, request);
    waiting?.throwIfAborted();
    try {
      const submitted = await this.admitted(ctx, conversationId, on, command, waiting);
      const added = submitted.events.find((e) => e.type === 'UserMessageAdded');
      // The version just before the message (after an interrupt's cancellation of the turn before).
      return { turnId: command.turnId, version: (added?.version ?? submitted.version) - 1 };
    } catch (error) {
      // A retry that raced the first request and lost: the log has the first one's turn now.
      if (error instanceof AlreadyAccepted && request) return this.acceptedTurn(error.state, request)!;
      throw error;
    }
  }

  /** The SubmitMessage command: a new turn with the agent as the tenant's defaults complete it now. */
  private async messageCommand(
    ctx: CallContext,
    agentId: string,
    message: Message,
    request: AcceptedRequest | undefined,
  ): Promise<Extract<ConversationCommand, { type: 'SubmitMessage' }>> {
    // Both from memory while the bus vouches for them; when one is read, the other is not waited for.
    const [defaults, defined] = await Promise.all([
      this.options.defaults?.load(ctx.tenantId),
      this.agent(ctx.tenantId, agentId),
    ]);
    const agent = withDefaults(defined, defaults ?? {});
    checkContext(message.context, agent.options?.contextSchema);
    return {
      type: 'SubmitMessage',
      turnId: uuidv7(),
      messageId: uuidv7(),
      content: message.content,
      ifBusy: message.ifBusy ?? 'reject',
      ...turnStartOf(message.content, agent),
      role: ctx.role,
      by: ctx.userId,
      ...(message.replaceFrom ? { replaceFrom: message.replaceFrom } : {}),
      ...(message.context ? { context: message.context } : {}),
      user: message.user,
      ...(request ? { request } : {}),
      at: this.clock(),
    };
  }

  /**
   * Submits a message within the tenant's budget. Bad input and a busy conversation (`ifBusy:
   * reject`) are refused by the decider before anything is reserved; the turn is then reserved,
   * and a submit that still fails (a race with another message) releases its reservation. The
   * reservation comes first so a refusal writes nothing to the conversation. A caller that no
   * longer waits by the time of the append (the reservation may take a while under load) gets its
   * error and the reservation back, and the conversation gets nothing.
   */
  private async admitted(
    ctx: CallContext,
    conversationId: string,
    on: { state: Conversation; fresh: boolean },
    command: Extract<ConversationCommand, { type: 'SubmitMessage' }>,
    waiting: CallerWaiting | undefined,
  ) {
    const budgets = this.options.budgets;
    const submit = async () => {
      waiting?.throwIfAborted();
      const handled = await this.run(ctx, conversationId, command);
      if (handled.events.length === 0) throw new AlreadyAccepted(handled.state);
      return handled;
    };
    if (!budgets) return submit();
    try {
      conversationDecider.decide(command, on.state);
    } catch (error) {
      // A refusal on a remembered state may be stale (a turn since ended elsewhere): ask the log.
      if (!on.fresh) throw new Unconfirmed();
      throw error;
    }
    return budgets.admit(
      {
        tenantId: ctx.tenantId,
        conversationId,
        turnId: command.turnId,
        at: command.at,
        metadata: eventMetadata(ctx),
      },
      submit,
    );
  }

  /** The turn a message request was accepted with, if the log has it (else undefined). */
  private acceptedTurn(
    state: Conversation,
    request: AcceptedRequest,
  ): { turnId: string; version: number } | undefined {
    const seen = acceptedRequest(state, request.key);
    if (!seen) return undefined;
    if (seen.kind !== 'message' || seen.hash !== request.hash) throw sameRequestConflict();
    return { turnId: seen.turnId, version: seen.version };
  }

  /**
   * The conversation id a create request's key stands for: a new one (`minted`), bound to the key by
   * the first append to the key's own stream (exactly one of racing creates wins it), or the one
   * the first request bound. Another request with the key: a conflict naming Idempotency-Key.
   */
  private async claimConversationId(
    ctx: CallContext,
    request: AcceptedRequest,
    at: string,
  ): Promise<{ conversationId: string; minted: boolean }> {
    const stream = streamName(CONVERSATION_KEY_CATEGORY, request.key);
    const conversationId = uuidv7();
    const claimed: ConversationKeyClaimed = {
      type: 'ConversationKeyClaimed',
      data: { conversationId, hash: request.hash, at },
    };
    try {
      await this.store.append(ctx.tenantId, stream, [{ ...claimed, metadata: eventMetadata(ctx) }], {
        expectedVersion: 'no_stream',
      });
      return { conversationId, minted: true };
    } catch (error) {
      if (!(error instanceof ConcurrencyError)) throw error;
    }
    const [first] = await this.store.read(ctx.tenantId, stream, { fromVersion: 1 });
    const data = first ? asDecided<ConversationKeyClaimed>(first).data : undefined;
    if (!data) throw new ConcurrencyError(stream, 'no_stream', undefined);
    if (data.hash !== request.hash) throw sameRequestConflict();
    return { conversationId: data.conversationId, minted: false };
  }

  /**
   * Best effort: the conversation's data key made now, so its first message does not wait for
   * that insert (a failure here leaves it to the first sealed write, as without this).
   */
  private async makeDataKey(ctx: CallContext, conversationId: string): Promise<void> {
    await this.options.makeDataKey?.(ctx.tenantId, conversationId).catch(() => undefined);
  }

  /** Best effort: a failed write is reported, not thrown; the index projection records it later. */
  private async index(
    tenantId: string,
    conversationId: string,
    entry: Omit<IndexedConversation, 'tenantId' | 'conversationId'>,
  ): Promise<void> {
    const { index, onIndexError } = this.options;
    if (!index) return;
    try {
      await index.record({ tenantId, conversationId, ...entry });
    } catch (error) {
      onIndexError?.(error, { tenantId, conversationId });
    }
  }

  private async agent(tenantId: string, agentId: string): Promise<AgentDefinition> {
    const agent = ownValue((await this.config.load(tenantId)).agents, agentId);
    if (!agent) throw new NotFoundError(`agent ${agentId} not found`);
    return agent;
  }
}
