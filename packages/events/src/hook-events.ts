import type { EventData } from '@keel/core';

/**
 * The public names of the durable stream events (API.md "The turn stream", runs' streams) by the
 * event type that carries each: what a hook's `events` may list and what it is sent as.
 */
export const DURABLE_EVENT_NAMES: Readonly<Record<string, string>> = {
  TurnStarted: 'turn.started',
  ConversationUpdated: 'conversation.updated',
  ToolCallRequested: 'tool.call',
  ApprovalRequested: 'approval.required',
  // A sub-agent's approval, shown in its parent's stream too.
  ChildApprovalRequested: 'approval.required',
  ApprovalDecided: 'approval.decided',
  ApprovalDecidedByPolicy: 'approval.decided',
  ToolCallCompleted: 'tool.result',
  AssistantMessageCompleted: 'message.completed',
  UsageRecorded: 'usage',
  TurnCompleted: 'turn.completed',
  TurnFailed: 'turn.failed',
  TurnCancelled: 'turn.cancelled',
  HookDataReceived: 'data',
  RunStarted: 'run.started',
  TaskStarted: 'task.started',
  TaskCompleted: 'task.completed',
  TaskFailed: 'task.failed',
  RunCompleted: 'run.completed',
  RunFailed: 'run.failed',
  RunCancelled: 'run.cancelled',
};

/** The event names a hook may subscribe to (`data` excluded: a hook's answer never triggers hooks). */
export const HOOK_EVENT_NAMES: readonly string[] = [
  ...new Set(Object.values(DURABLE_EVENT_NAMES).filter((name) => name !== 'data')),
];

/** A hook as stored (API.md "Hooks": `PUT /v1/hooks/{name}`). */
export interface HookDefinition {
  name: string;
  /** Where matching events are POSTed (egress-guarded at PUT and at every send). */
  url: string;
  /** Public event names (HOOK_EVENT_NAMES), at least one. */
  events: string[];
  /** Only this agent's conversations; absent: every conversation (and run) of the tenant. */
  agentId?: string;
}

/** A hook was created or replaced. */
export type HookConfigured = EventData<'HookConfigured', { hook: HookDefinition; at: string }>;

/** A hook was removed: nothing more is sent to it. */
export type HookDeleted = EventData<'HookDeleted', { name: string; at: string }>;

/**
 * A hook answered an event with `{ data }` (appended to the event's conversation once per hook and
 * event id; shown as the `data` stream event `{ hook, data }`).
 */
export type HookDataReceived = EventData<
  'HookDataReceived',
  { hook: string; eventId: string; data: Record<string, unknown>; at: string }
>;
