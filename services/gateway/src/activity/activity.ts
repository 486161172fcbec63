import type { RecordedEvent } from '@keel/core';
import { asDecided, parseStreamName } from '@keel/core';
import type { ConversationEvent } from '@keel/events';
import { CONVERSATION_CATEGORY, CONVERSATION_DELETED } from '@keel/events';

/** A tool call waiting for a person's decision (API.md `GET /v1/approvals` row). */
export interface PendingApproval {
  tenantId: string;
  conversationId: string;
  approvalId: string;
  toolCallId: string;
  tool: string;
  args: unknown;
  /** The assistant's text of the step that asked for the call, when it said something. */
  message?: string;
  requestedAt: string;
}

/** A turn that started and has not ended (completed, failed or cancelled). */
export interface RunningTurn {
  tenantId: string;
  conversationId: string;
  turnId: string;
  agentId: string;
  /** When the turn started (its TurnStarted's `at`). */
  startedAt: string;
}

/**
 * What is happening on the platform now, folded from the conversation events of the global log:
 * turns running and approvals pending, per tenant. Every entry is keyed by tenant first, so a
 * read for one tenant never sees another's. Invariant: an approval is pending from its
 * ApprovalRequested until its ApprovalDecided or the end of its turn (a cancel withdraws it); a
 * turn runs from TurnStarted until TurnCompleted, TurnFailed or TurnCancelled.
 */
export class Activity {
  private readonly turns = new Map<string, RunningTurn>();
  private readonly approvals = new Map<string, PendingApproval & { turnKey: string }>();
  /**
   * Client tool calls waiting for the client (API.md "Client tools"), by tenant and tool call id:
   * from the event that gives the call its deadline (its ToolCallRequested, or the approval that
   * lets it run) until its ToolCallCompleted (answer, timeout) or the end of its turn.
   */
  private readonly clientCalls = new Map<string, { tenantId: string; turnKey: string }>();
  /** The latest assistant text of each running turn: the `message` of an approval it asks for. */
  private readonly lastText = new Map<string, string>();

  /** Folds one event of the global log (anything but a conversation event is ignored). */
  apply(recorded: RecordedEvent): void {
    const conversationId = conversationOf(recorded.streamName);
    if (conversationId === undefined) return;
    const { tenantId } = recorded;
    const event = asDecided<ConversationEvent>(recorded);
    const turnKey = (turnId: string) => `${tenantId}|${conversationId}|${turnId}`;
    if (recorded.type === CONVERSATION_DELETED) return this.forgetConversation(turnKey(''));
    this.followClientCall(tenantId, event, turnKey);
    switch (event.type) {
      case 'TurnStarted':
        this.turns.set(turnKey(event.data.turnId), {
          tenantId,
          conversationId,
          turnId: event.data.turnId,
          agentId: event.data.agent.agentId,
          startedAt: event.data.at,
        });
        return;
      case 'AssistantMessageCompleted':
        if (event.data.text) this.lastText.set(turnKey(event.data.turnId), event.data.text);
        return;
      case 'ApprovalRequested': {
        const { approvalId, toolCallId, name, args, requestedAt, turnId } = event.data;
        const message = this.lastText.get(turnKey(turnId));
        this.approvals.set(`${tenantId}|${approvalId}`, {
          tenantId,
          conversationId,
          approvalId,
          toolCallId,
          tool: name,
          args,
          ...(message ? { message } : {}),
          requestedAt,
          turnKey: turnKey(turnId),
        });
        return;
      }
      case 'ApprovalDecided':
        this.approvals.delete(`${tenantId}|${event.data.approvalId}`);
        return;
      case 'TurnCompleted':
      case 'TurnFailed':
      case 'TurnCancelled':
        this.endTurn(turnKey(event.data.turnId));
        return;
      default:
        return;
    }
  }

  /** Running turns, oldest first: one tenant's, or every tenant's. */
  runningTurns(tenantId?: string): RunningTurn[] {
    return [...this.turns.values()]
      .filter((turn) => tenantId === undefined || turn.tenantId === tenantId)
      .sort((a, b) => a.startedAt.localeCompare(b.startedAt) || a.turnId.localeCompare(b.turnId));
  }

  /** How many client tool calls wait for their client: one tenant's, or every tenant's. */
  clientCallsPending(tenantId?: string): number {
    return [...this.clientCalls.values()].filter((c) => tenantId === undefined || c.tenantId === tenantId)
      .length;
  }

  /** A client call waits from the event that gives it a deadline until any result of it. */
  private followClientCall(
    tenantId: string,
    event: ConversationEvent,
    turnKey: (turnId: string) => string,
  ): void {
    if (event.type === 'ToolCallCompleted') {
      this.clientCalls.delete(`${tenantId}|${event.data.toolCallId}`);
      return;
    }
    if (event.type !== 'ToolCallRequested' && event.type !== 'ApprovalDecided') return;
    if (event.data.deadline === undefined) return;
    const { toolCallId, turnId } = event.data;
    this.clientCalls.set(`${tenantId}|${toolCallId}`, { tenantId, turnKey: turnKey(turnId) });
  }

  /** Pending approvals, oldest first: one tenant's, or every tenant's. */
  pendingApprovals(tenantId?: string): PendingApproval[] {
    return [...this.approvals.values()]
      .filter((approval) => tenantId === undefined || approval.tenantId === tenantId)
      .map(({ turnKey: _turnKey, ...approval }) => approval)
      .sort((a, b) => a.requestedAt.localeCompare(b.requestedAt) || a.approvalId.localeCompare(b.approvalId));
  }

  /** A deleted conversation (by its turn keys' prefix): its turns end, its approvals go. */
  private forgetConversation(prefix: string): void {
    for (const key of [...this.turns.keys()]) if (key.startsWith(prefix)) this.endTurn(key);
    for (const [approvalKey, approval] of this.approvals) {
      if (approval.turnKey.startsWith(prefix)) this.approvals.delete(approvalKey);
    }
  }

  private endTurn(key: string): void {
    this.turns.delete(key);
    this.lastText.delete(key);
    for (const [approvalKey, approval] of this.approvals) {
      if (approval.turnKey === key) this.approvals.delete(approvalKey);
    }
    for (const [callKey, call] of this.clientCalls) {
      if (call.turnKey === key) this.clientCalls.delete(callKey);
    }
  }
}

/** The conversation id of a conversation stream's name, else undefined. */
export const conversationOf = (name: string): string | undefined => {
  const dash = name.indexOf('-');
  if (dash <= 0 || name.slice(0, dash) !== CONVERSATION_CATEGORY) return undefined;
  return parseStreamName(name).id;
};
