import type { Consumer, Delivery, EventBus, EventStore, RecordedEvent } from '@keel/core';
import {
  BudgetExceededError,
  ConcurrencyError,
  ConflictError,
  NotFoundError,
  ValidationError,
  isEvent,
  ownValue,
  parseStreamName,
} from '@keel/core';
import type { ActorRole, EventError, ParentLink, TurnStarted } from '@keel/events';
import { CONVERSATION_CATEGORY, turnIdOf } from '@keel/events';
import type { KeelLogger } from '@keel/runtime';
import type { CallContext } from '../call-context.js';
import { ConversationConflictError } from '../conversation/conversation.decider.js';
import type { ConversationService } from '../conversation/conversation.service.js';
import { acceptedRequestOf } from '../grpc/accepted-request.js';
import type { TenantConfigService } from '../tenant-config/tenant-config.service.js';
import type { RequestedChild } from './sub-agent-policy.js';
import {
  approvalForParent,
  childOutcomeOf,
  childrenToCancel,
  concernsSubAgents,
  endsFirstTurn,
  parentLinkOf,
  requestedChildOf,
} from './sub-agent-policy.js';
import { judgeSubAgentCall } from './sub-agent-rules.js';

/** Dependencies of the sub-agent manager. */
export interface SubAgentManagerDeps {
  store: EventStore;
  bus: EventBus;
  conversations: ConversationService;
  config: TenantConfigService;
  logger: KeelLogger;
}

/** Why starting a child can fail for good (a tool error for the parent, not a redelivery). */
const isRefusal = (error: unknown): boolean =>
  error instanceof ValidationError ||
  error instanceof NotFoundError ||
  error instanceof BudgetExceededError ||
  (error instanceof ConflictError && !(error instanceof ConcurrencyError));

/**
 * The process manager of sub-agent calls (the IO half of sub-agent-policy.ts), in the pattern of
 * the run manager: a parent's `ToolCallRequested` of `agent__<id>` creates the child conversation
 * (its id derived from the call, its creation and its task's turn keyed by the call: a redelivery
 * or another instance after a kill repeats nothing) and submits the task as the parent's end user;
 * the end of the child's first turn is recorded as the parent call's result (the parent's decider
 * drops a repeat); a child's approval request is shown in the parent (once); a parent's cancelled
 * or failed turn cancels its children, which cascades down the chain.
 */
export class SubAgentManager {
  private consumer: Consumer | undefined;

  constructor(private readonly deps: SubAgentManagerDeps) {}

  async start(): Promise<void> {
    this.consumer = await this.deps.bus.consume(
      {
        name: 'agent-sub-agents',
        filter: { category: CONVERSATION_CATEGORY },
        idempotency: 'none',
        maxInFlight: 16,
      },
      (delivery) => this.onEvent(delivery),
    );
  }

  async stop(): Promise<void> {
    await this.consumer?.stop();
    this.consumer = undefined;
  }

  private async onEvent({ event }: Delivery): Promise<void> {
    if (!concernsSubAgents(event)) return;
    const child = requestedChildOf(event);
    if (child) {
      await this.startChild(event, child);
      return;
    }
    const link = await this.parentLink(event);
    if (event.type !== 'ApprovalRequested' && event.type !== 'ChildApprovalRequested') {
      await this.turnEnded(event, link);
      return;
    }
    const approval = link && approvalForParent(parseStreamName(event.streamName).id, link, event);
    if (!link || !approval) return;
    await this.deps.conversations.run(systemContext(event), link.conversationId, {
      type: 'RecordChildApproval',
      approval,
    });
  }

  /**
   * The parent a conversation was created under, if it is a child: fixed at creation, so any
   * state this process holds of it answers (no read); else its first event, read.
   */
  private async parentLink(event: RecordedEvent): Promise<ParentLink | undefined> {
    const held = this.deps.conversations.handler.remembered(event.tenantId, event.streamName);
    if (held && held.state.status !== 'new') return held.state.parent;
    const [created] = await this.deps.store.read(event.tenantId, event.streamName, { toVersion: 1 });
    return parentLinkOf(created);
  }

  /** A turn ended: a child's first turn answers its parent's call; a cancelled or failed turn cancels its children. */
  private async turnEnded(event: RecordedEvent, link: ParentLink | undefined): Promise<void> {
    // A completed turn of a conversation that is nobody's child answers nothing and cancels nothing.
    if (!link && event.type === 'TurnCompleted') return;
    const events = await this.deps.store.read(event.tenantId, event.streamName, { toVersion: event.version });
    if (link && endsFirstTurn(event, events)) {
      const agentId = String((events[0]?.data as { agentId?: unknown }).agentId);
      const turnId = turnIdOf(event);
      const outcome = childOutcomeOf(
        agentId,
        event,
        events.filter((e) => turnIdOf(e) === turnId),
      );
      await this.answerParent(event, link, outcome.ok ? { ok: true, result: outcome.result } : outcome);
    }
    for (const childId of childrenToCancel(event, events)) await this.cancelChild(event, childId);
  }

  /** Creates the child and submits its task, unless the parent's call is no longer open. */
  private async startChild(event: RecordedEvent, child: RequestedChild): Promise<void> {
    const { conversations, config } = this.deps;
    const { state } = await conversations.handler.load(event.tenantId, event.streamName);
    const call = state.turn?.toolCalls.find((c) => c.toolCallId === child.toolCallId);
    if (!call || call.state === 'completed') return;
    const agent = ownValue((await config.load(event.tenantId)).agents, state.agentId);
    const verdict = judgeSubAgentCall(child.name, child.toolCallId, {
      conversationId: state.id,
      ...(state.parent ? { parent: state.parent } : {}),
      agent: agent ?? { agentId: state.agentId },
    });
    const parentCall = { conversationId: state.id, toolCallId: child.toolCallId };
    if (verdict?.kind !== 'run') {
      const error = verdict?.error ?? { code: 'unknown_tool', message: `no sub-agent in ${child.name}` };
      await this.answerParent(event, parentCall, { ok: false, error });
      return;
    }
    try {
      await this.runChild(event, child, verdict.link);
    } catch (error) {
      if (!isRefusal(error)) throw error;
      const message = `agent "${child.agentId}" could not start: ${error instanceof Error ? error.message : String(error)}`;
      await this.answerParent(event, parentCall, { ok: false, error: { code: 'sub_agent_failed', message } });
    }
  }

  /**
   * Creates the child (its id derived from the call) and submits its task as the parent's end
   * user, both keyed by the call; then, when the parent's call ended meanwhile (its cancel found no
   * child turn to cancel yet), cancels the child's turn.
   */
  private async runChild(event: RecordedEvent, child: RequestedChild, parent: ParentLink): Promise<void> {
    const { conversations } = this.deps;
    const { ctx, userRole } = await this.endUserOf(event, child.turnId);
    const key = `subagent:${child.toolCallId}`;
    await conversations.create(
      ctx,
      {
        agentId: child.agentId,
        title: `${child.agentId} (sub-agent)`,
        child: { conversationId: child.childConversationId, parent },
      },
      acceptedRequestOf('CreateConversation', key, { agentId: child.agentId }),
    );
    await conversations.send(
      ctx,
      child.childConversationId,
      { content: child.task, ...(userRole ? { userRole } : {}) },
      acceptedRequestOf('SubmitMessage', key, { content: child.task }),
    );
    const after = await conversations.handler.load(event.tenantId, event.streamName);
    const open = after.state.turn?.toolCalls.some(
      (c) => c.toolCallId === child.toolCallId && c.state !== 'completed',
    );
    if (!open) await this.cancelChild(event, child.childConversationId);
  }

  /** Records a child's outcome as its parent's call result; a call that is done already keeps its first one. */
  private async answerParent(
    event: RecordedEvent,
    link: Pick<ParentLink, 'conversationId' | 'toolCallId'>,
    outcome: { ok: true; result: unknown } | { ok: false; error: EventError },
  ): Promise<void> {
    await this.deps.conversations
      .recordToolResult(systemContext(event), link.conversationId, {
        toolCallId: link.toolCallId,
        ...outcome,
      })
      .catch((error: unknown) => {
        if (!(error instanceof ConversationConflictError)) throw error;
      });
  }

  private async cancelChild(event: RecordedEvent, childId: string): Promise<void> {
    try {
      await this.deps.conversations.cancel(
        systemContext(event),
        childId,
        acceptedRequestOf('CancelTurn', `subagent-cancel:${childId}`, {}),
      );
    } catch (error) {
      // Not created, or no turn running (it ended, or a previous delivery cancelled it): nothing to do.
      if (!(error instanceof ConflictError) && !(error instanceof NotFoundError)) throw error;
    }
  }

  /**
   * The end user the parent's turn runs for (its message's actor, and the role its TurnStarted
   * recorded from `X-Keel-User-Role`): the child runs for them too, so `userRoles` tools and
   * `{{user.*}}` instructions see the same user down the chain.
   */
  private async endUserOf(
    event: RecordedEvent,
    turnId: string,
  ): Promise<{ ctx: CallContext; userRole?: string }> {
    const events = await this.deps.store.read(event.tenantId, event.streamName);
    const message = events.find((e) => e.type === 'UserMessageAdded' && turnIdOf(e) === turnId);
    const started = events.find(
      (e): e is RecordedEvent & TurnStarted =>
        isEvent<TurnStarted>(e, 'TurnStarted') && e.data.turnId === turnId,
    );
    const actor = message?.metadata.actor;
    const ctx: CallContext = {
      tenantId: event.tenantId,
      keyId: actor?.keyId ?? 'system:agent',
      role: (actor?.role ?? 'editor') as ActorRole,
      userId: actor?.userId ?? actor?.keyId ?? 'system:agent',
      correlationId: event.metadata.correlationId ?? event.eventId,
    };
    return { ctx, userRole: started?.data.user?.role };
  }
}

/** The context of what the manager records itself, tied to the event that caused it. */
const systemContext = (event: RecordedEvent): CallContext => ({
  tenantId: event.tenantId,
  keyId: 'system:agent',
  role: 'admin',
  userId: 'system:agent',
  correlationId: event.metadata.correlationId ?? event.eventId,
});
