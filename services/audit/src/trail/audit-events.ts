import type { RecordedEvent } from '@keel/core';
import { isEvent } from '@keel/core';
import type { ToolCallExecuted } from '@keel/events';
import type { AuditEntry } from './audit-entry.js';

/** The platform tenant whose `tenants-registry` stream holds tenants, keys and budgets (see the gateway). */
export const REGISTRY_TENANT = 'keel';

type Data = Record<string, unknown>;

const isFields = (data: unknown): data is Data =>
  typeof data === 'object' && data !== null && !Array.isArray(data);

/** An event's data as fields to read one by one (each checked where it is read); none when it is not an object. */
const fieldsOf = (data: unknown): Data => (isFields(data) ? data : {});
type Described = { tenantId?: string; target: string; details: AuditEntry['details'] };

const str = (value: unknown): string => (typeof value === 'string' ? value : '');
const conversationIdOf = (streamName: string): string | undefined =>
  streamName.startsWith('conversation-') ? streamName.slice('conversation-'.length) : undefined;

/**
 * What each audited event type records. Only named, non-secret fields are copied: provider keys
 * and webhook secrets are sealed in their events and never reach the trail (only whether one was set).
 */
const DESCRIBE: Record<string, (data: Data) => Described> = {
  // Tenant registry (operator actions, stream of the platform tenant; the tenant is in the data).
  TenantCreated: (d) => ({
    tenantId: str(d.tenantId),
    target: `tenant:${str(d.tenantId)}`,
    details: { name: str(d.name) },
  }),
  KeyIssued: (d) => ({
    tenantId: str(d.tenantId),
    target: `key:${str(d.keyId)}`,
    details: { role: str(d.role), ...(typeof d.name === 'string' ? { name: d.name } : {}) },
  }),
  KeyRevoked: (d) => ({ tenantId: str(d.tenantId), target: `key:${str(d.keyId)}`, details: {} }),
  BudgetSet: (d) => ({
    tenantId: str(d.tenantId),
    target: 'budget',
    details:
      typeof d.monthlyUsd === 'number'
        ? { monthlyUsd: String(d.monthlyUsd) }
        : ({} as Record<string, string>),
  }),
  // Tenant configuration (admin actions).
  ToolConfigured: (d) => {
    const tool = (d.tool ?? {}) as Data;
    return {
      target: `tool:${str(tool.name)}`,
      details: { kind: str(tool.kind), approval: str(tool.approval) },
    };
  },
  AgentConfigured: (d) => {
    const agent = (d.agent ?? {}) as Data;
    return { target: `agent:${str(agent.agentId)}`, details: { model: str(agent.model) } };
  },
  ProviderConfigured: (d) => ({
    target: `provider:${str(d.provider)}`,
    details: {
      apiKeySet: String(d.apiKey !== undefined && d.apiKey !== null),
      ...(typeof d.baseUrl === 'string' ? { baseUrl: d.baseUrl } : {}),
    },
  }),
  WebhookSecretRotated: () => ({ target: 'webhook-secret', details: {} }),
  TeamConfigured: (d) => {
    const team = (d.team ?? {}) as Data;
    const members = Array.isArray(team.members) ? team.members.length : 0;
    return {
      target: `team:${str(team.teamId)}`,
      details: { topology: str(team.topology), aggregation: str(team.aggregation), members: String(members) },
    };
  },
  TeamDeleted: (d) => ({ target: `team:${str(d.teamId)}`, details: {} }),
  DefaultsConfigured: (d) => {
    const defaults = fieldsOf(d.defaults);
    return {
      target: 'defaults',
      details: Object.fromEntries(
        ['model', 'temperature', 'maxSteps'].flatMap((k) =>
          defaults[k] === undefined ? [] : [[k, String(defaults[k])]],
        ),
      ),
    };
  },
  // Runs of teams (editor actions): started and cancelled.
  RunStarted: (d) => {
    const team = (d.team ?? {}) as Data;
    return { target: `run:${str(d.runId)}`, details: { teamId: str(team.teamId) } };
  },
  RunCancelled: (d) => ({ target: `run:${str(d.runId)}`, details: {} }),
  // Conversations: approvals, cancels, tool executions.
  ApprovalDecided: (d) => ({
    target: `approval:${str(d.approvalId)}`,
    details: {
      decision: str(d.decision),
      toolCallId: str(d.toolCallId),
      turnId: str(d.turnId),
      ...(typeof d.reason === 'string' ? { reason: d.reason.slice(0, 500) } : {}),
    },
  }),
  // A deleted conversation (API.md DELETE): which, by whom, when; nothing of its content.
  ConversationDeleted: (d) => ({ target: `conversation:${str(d.conversationId)}`, details: {} }),
  TurnCancelled: (d) => ({ target: `turn:${str(d.turnId)}`, details: { by: str(d.by) } }),
  // How turns ended (API.md "Models, defaults and agent options"): the finish reason, or the error's code.
  TurnCompleted: (d) => ({ target: `turn:${str(d.turnId)}`, details: { finishReason: str(d.finishReason) } }),
  TurnFailed: (d) => ({
    target: `turn:${str(d.turnId)}`,
    details: { code: str(fieldsOf(d.error).code) },
  }),
  ToolCallCompleted: (d) => ({
    target: `toolcall:${str(d.toolCallId)}`,
    details: { name: str(d.name), ok: String(d.ok === true), turnId: str(d.turnId) },
  }),
  ToolCallExecuted: (d) => ({
    target: `toolcall:${str(d.toolCallId)}`,
    details: {
      name: str(d.name),
      ok: String(d.ok === true),
      attempts: String(typeof d.attempts === 'number' ? d.attempts : 0),
      durationMs: String(typeof d.durationMs === 'number' ? d.durationMs : 0),
    },
  }),
};

/**
 * The `details` that copy a conversation's free text (an approval's reason): content, dropped
 * from the conversation's entries when it is deleted (the entry itself stays). The erased events
 * a later read finds (clearPartAsWritten) have no such field.
 */
export const CONVERSATION_TEXT_DETAILS: readonly string[] = ['reason'];

/** The event types the audit trail records. */
export const AUDITED_EVENT_TYPES: readonly string[] = Object.keys(DESCRIBE);

/**
 * The audit entry of an event, or undefined when the trail does not record its type. Registry
 * events belong to the tenant named in their data; every other one to the tenant it was logged under.
 */
export const auditEntryOf = (event: RecordedEvent): AuditEntry | undefined => {
  const describe = DESCRIBE[event.type];
  if (!describe) return undefined;
  const registry = event.tenantId === REGISTRY_TENANT && event.streamName === 'tenants-registry';
  const isRegistryType = ['TenantCreated', 'KeyIssued', 'KeyRevoked', 'BudgetSet'].includes(event.type);
  if (registry !== isRegistryType) return undefined;
  const described = describe(fieldsOf(event.data));
  const tenantId = registry ? described.tenantId : event.tenantId;
  if (!tenantId) return undefined;
  const actor = event.metadata.actor ?? {};
  const toolCall = isEvent<ToolCallExecuted>(event, 'ToolCallExecuted') ? str(event.data.conversationId) : '';
  const conversationId = conversationIdOf(event.streamName) ?? (toolCall || undefined);
  return {
    id: event.eventId,
    tenantId,
    at: event.recordedAt,
    type: event.type,
    target: described.target,
    actor: { keyId: actor.keyId ?? '', role: actor.role ?? '', userId: actor.userId ?? actor.keyId ?? '' },
    requestId: event.metadata.correlationId ?? '',
    ...(conversationId ? { conversationId } : {}),
    details: described.details,
  };
};
