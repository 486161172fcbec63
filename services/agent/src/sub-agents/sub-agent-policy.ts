import type { RecordedEvent } from '@keel/core';
import type { ChildApprovalRequested, EventError, ParentLink } from '@keel/events';
import { subAgentIdOf, turnIdOf } from '@keel/events';

/*
 * The sub-agent process manager's decisions, apart from its IO (sub-agent-manager.ts): which
 * conversation event asks for what (start a child, report a child's answer to its parent, show a
 * child's approval in the parent, cancel children), and what a child's turn answers. Pure.
 */

/** A conversation event as the manager reads it. */
type Event = Pick<RecordedEvent, 'type' | 'data'>;

const TURN_ENDS: ReadonlySet<string> = new Set(['TurnCompleted', 'TurnFailed', 'TurnCancelled']);

const record = (value: unknown): Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};

/** A sub-agent call the parent's log requested: the child to run and its task. */
export interface RequestedChild {
  turnId: string;
  toolCallId: string;
  name: string;
  agentId: string;
  childConversationId: string;
  task: string;
}

/** The sub-agent call a `ToolCallRequested` asks for, if it is one. */
export const requestedChildOf = (event: Event): RequestedChild | undefined => {
  if (event.type !== 'ToolCallRequested') return undefined;
  const data = record(event.data);
  const { turnId, toolCallId, name, childConversationId } = data;
  if (typeof turnId !== 'string' || typeof toolCallId !== 'string' || typeof name !== 'string')
    return undefined;
  if (typeof childConversationId !== 'string') return undefined;
  const agentId = subAgentIdOf(name);
  if (agentId === undefined) return undefined;
  const task = record(data.args).task;
  return {
    turnId,
    toolCallId,
    name,
    agentId,
    childConversationId,
    task: typeof task === 'string' ? task : '',
  };
};

/** The kinds of events the manager acts on (the rest it skips without reading anything). */
export const concernsSubAgents = (event: Event): boolean =>
  requestedChildOf(event) !== undefined ||
  TURN_ENDS.has(event.type) ||
  event.type === 'ApprovalRequested' ||
  event.type === 'ChildApprovalRequested';

/** The parent link a conversation's first event records, if it is a child. */
export const parentLinkOf = (created: Event | undefined): ParentLink | undefined => {
  if (created?.type !== 'ConversationCreated') return undefined;
  const parent = record(created.data).parent;
  return typeof parent === 'object' && parent !== null ? (parent as ParentLink) : undefined;
};

/** What a child's turn answers its parent's call: the final answer, or the tool error. */
export type ChildOutcome = { ok: true; result: string } | { ok: false; error: EventError };

/**
 * The outcome of the child turn that `end` ended, from the turn's events: a completed turn
 * answers its last message's text; a failed one is the tool error `sub_agent_failed`, a
 * cancelled one `cancelled` (neither fails the parent: the parent's model reads the error).
 */
export const childOutcomeOf = (agentId: string, end: Event, turnEvents: readonly Event[]): ChildOutcome => {
  if (end.type === 'TurnFailed') {
    const error = record(record(end.data).error);
    const reason = typeof error.message === 'string' ? error.message : 'the turn failed';
    return {
      ok: false,
      error: { code: 'sub_agent_failed', message: `agent "${agentId}" failed: ${reason}` },
    };
  }
  if (end.type === 'TurnCancelled') {
    return { ok: false, error: { code: 'cancelled', message: `agent "${agentId}" was cancelled` } };
  }
  const answer = turnEvents.findLast(
    (e) => e.type === 'AssistantMessageCompleted' && String(record(e.data).text ?? '').trim() !== '',
  );
  return { ok: true, result: answer ? String(record(answer.data).text) : '' };
};

/** Whether `end` ends the child's first turn: the one its parent's call started (later ones are the child's own). */
export const endsFirstTurn = (end: Event, events: readonly Event[]): boolean => {
  const first = events.find((e) => e.type === 'TurnStarted');
  return first !== undefined && turnIdOf(first) === turnIdOf(end);
};

/**
 * What a child's approval request shows in its parent (under the parent's call `link.toolCallId`),
 * from an `ApprovalRequested` of the child itself or a `ChildApprovalRequested` a deeper
 * descendant passed up; undefined for any other event.
 */
export const approvalForParent = (
  conversationId: string,
  link: ParentLink,
  event: Event,
): Omit<ChildApprovalRequested['data'], 'turnId'> | undefined => {
  const data = record(event.data);
  const base = {
    toolCallId: link.toolCallId,
    approvalId: String(data.approvalId),
    name: String(data.name),
    args: data.args,
    ...(typeof data.message === 'string' ? { message: data.message } : {}),
    requestedAt: String(data.requestedAt),
  };
  if (event.type === 'ApprovalRequested') {
    return { ...base, conversationId, childToolCallId: String(data.toolCallId) };
  }
  if (event.type === 'ChildApprovalRequested') {
    return {
      ...base,
      conversationId: String(data.conversationId),
      childToolCallId: String(data.childToolCallId),
    };
  }
  return undefined;
};

/** The children a turn's sub-agent calls started that its end (cancelled or failed) cancels. */
export const childrenToCancel = (end: Event, events: readonly Event[]): string[] => {
  if (end.type !== 'TurnCancelled' && end.type !== 'TurnFailed') return [];
  const turnId = turnIdOf(end);
  return events.flatMap((e) => {
    const child = requestedChildOf(e);
    return child && child.turnId === turnId ? [child.childConversationId] : [];
  });
};
