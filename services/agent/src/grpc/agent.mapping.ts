// Proto types stop here: requests become the runtime's inputs, results become responses.
import { ValidationError, exceedsJsonDepth } from '@keel/core';
import type { AgentDefinition, AgentPhases, KeyRole, MemoryDeclaration, ToolDefinition } from '@keel/events';
import type { Agent as AgentMessage, Tool as ToolMessage } from '@keel/proto/keel/agent/v1/agent';
import type {
  Conversation as ConversationMessage,
  ConversationSummary,
  Message,
} from '@keel/proto/keel/conversations/v1/conversations';
import {
  ConversationStatus,
  Decision,
  IfBusy,
  MessageRole,
  conversationStatusFromJSON,
  decisionFromJSON,
  ifBusyFromJSON,
} from '@keel/proto/keel/conversations/v1/conversations';
import type { ListConversationsRequest } from '@keel/proto/keel/conversations/v1/conversations';
import type { FeedbackRating } from '@keel/events';
import type { ConversationFilter } from '../conversation-index/conversation-index.js';
import type { IfBusy as RuntimeIfBusy } from '../conversation/conversation.commands.js';
import type { ConversationView, ListedConversation } from '../conversation/conversation.service.js';
import type { BuiltinToolInfo } from '../turn/tool-catalog.js';
import { agentOptionsOf } from '../models/agent-options.js';
import { defaultedFieldsOf } from '../models/agent-defaults.js';
import { checkMemory } from '../turn/working-memory.js';

/** Deepest JSON a tool schema or an agent's phases may nest (the gateway checks the same). */
export const MAX_JSON_DEPTH = 32;
/** `timeout_ms` of a tool when the request leaves it 0 (API.md's example value). */
export const DEFAULT_TOOL_TIMEOUT_MS = 10_000;
/** `max_steps` of an agent when the request leaves it 0 (API.md's example value). */
export const DEFAULT_MAX_STEPS = 8;
/** `tool_result_max_chars` of an agent when the request leaves it 0. */
export const DEFAULT_TOOL_RESULT_MAX_CHARS = 8_000;

const STATUS: Record<ConversationView['status'], ConversationStatus> = {
  idle: ConversationStatus.IDLE,
  running: ConversationStatus.RUNNING,
  awaiting_approval: ConversationStatus.AWAITING_APPROVAL,
  awaiting_client: ConversationStatus.AWAITING_CLIENT,
  failed: ConversationStatus.FAILED,
};

const ROLE: Record<ConversationView['messages'][number]['role'], MessageRole> = {
  user: MessageRole.USER,
  assistant: MessageRole.ASSISTANT,
  tool: MessageRole.TOOL,
};

/** JSON text of a value the model or a tool produced (an unparsable model argument stays a JSON string). */
const jsonText = (value: unknown): string => JSON.stringify(value ?? null);

/** A conversation as ListConversations answers it. */
export const summaryMessage = (listed: ListedConversation): ConversationSummary => ({
  id: listed.id,
  agentId: listed.agentId,
  title: listed.title ?? '',
  status: STATUS[listed.status],
  createdAt: listed.createdAt,
  metadata: { ...listed.metadata },
  userId: listed.userId ?? '',
});

/** Longest feedback comment (characters). */
export const MAX_FEEDBACK_COMMENT_CHARS = 2000;

/** A rating word; anything else: INVALID_ARGUMENT naming `rating`. */
export const ratingOf = (value: string | undefined): FeedbackRating => {
  if (value === 'up' || value === 'down') return value;
  throw new ValidationError('rating must be up or down', { field: 'rating' });
};

/** The list filter of a ListConversations request (empty fields: no filter). */
export const listFilterOf = (input: ListConversationsRequest | undefined): ConversationFilter => {
  const status =
    input?.status === undefined ? ConversationStatus.UNSPECIFIED : conversationStatusFromJSON(input.status);
  const word = Object.entries(STATUS).find(([, value]) => value === status)?.[0];
  const metadata = input?.metadata ?? {};
  return {
    ...(input?.agentId ? { agentId: input.agentId } : {}),
    ...(input?.userId ? { userId: input.userId } : {}),
    ...(word ? { status: word } : {}),
    ...(Object.keys(metadata).length > 0 ? { metadata: { ...metadata } } : {}),
  };
};

/** The conversation as GetConversation answers it. */
export const conversationMessage = (view: ConversationView): ConversationMessage => ({
  id: view.id,
  agentId: view.agentId,
  title: view.title ?? '',
  status: STATUS[view.status],
  version: view.version,
  createdAt: view.createdAt,
  metadata: { ...view.metadata },
  userId: view.userId ?? '',
  ...(view.phase === undefined ? {} : { phase: view.phase }),
  messages: view.messages.map((m): Message => ({
    id: m.id,
    role: ROLE[m.role],
    content: m.content,
    toolCalls: (m.toolCalls ?? []).map((c) => ({
      id: c.toolCallId,
      name: c.name,
      argsJson: jsonText(c.args),
    })),
    ...(m.toolCallId === undefined ? {} : { toolCallId: m.toolCallId }),
    ...(m.context === undefined ? {} : { contextJson: JSON.stringify(m.context) }),
    ...(m.feedback === undefined ? {} : { feedback: { ...m.feedback } }),
  })),
  pendingApprovals: view.pendingApprovals.map((a) => ({
    approvalId: a.approvalId,
    toolCallId: a.toolCallId,
    tool: a.tool,
    argsJson: jsonText(a.args),
    requestedAt: a.requestedAt,
  })),
  pendingClientCalls: view.pendingClientCalls.map((c) => ({
    toolCallId: c.toolCallId,
    tool: c.tool,
    argsJson: jsonText(c.args),
    deadline: c.deadline,
  })),
  usage: { ...view.usage },
  contextTokens: view.contextTokens,
  ...(view.parentConversationId ? { parentConversationId: view.parentConversationId } : {}),
  entities: view.entities.map((e) => ({ ...e })),
});

/**
 * `if_busy` as the runtime names it. Nest's proto loader hands enums over as their names
 * (`IF_BUSY_ENQUEUE`), ts-proto's types say numbers: both are read.
 */
export const ifBusyOf = (value: unknown): RuntimeIfBusy => {
  switch (ifBusyFromJSON(value ?? 0)) {
    case IfBusy.UNSPECIFIED:
    case IfBusy.REJECT:
      return 'reject';
    case IfBusy.ENQUEUE:
      return 'enqueue';
    case IfBusy.INTERRUPT:
      return 'interrupt';
    default:
      throw new ValidationError('request.ifBusy must be REJECT, ENQUEUE or INTERRUPT', {
        field: 'request.ifBusy',
      });
  }
};

/** A decision as the runtime names it; UNSPECIFIED or unknown: INVALID_ARGUMENT. */
export const decisionOf = (value: unknown): 'approve' | 'deny' => {
  switch (decisionFromJSON(value ?? 0)) {
    case Decision.APPROVE:
      return 'approve';
    case Decision.DENY:
      return 'deny';
    default:
      throw new ValidationError('request.decision must be APPROVE or DENY', { field: 'request.decision' });
  }
};

/** A decision as the response carries it. */
export const decisionMessage = (decision: 'approve' | 'deny'): Decision =>
  decision === 'approve' ? Decision.APPROVE : Decision.DENY;

/** Parses a JSON text field that must hold an object; INVALID_ARGUMENT naming the field otherwise. */
const jsonObject = (text: string, field: string): Record<string, unknown> => {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ValidationError(`${field} is not valid JSON`, { field });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ValidationError(`${field} must be a JSON object`, { field });
  }
  // Checked before any recursive reader (the schema compiler, JSON.stringify) sees it.
  if (exceedsJsonDepth(value, MAX_JSON_DEPTH)) {
    throw new ValidationError(`${field} is nested deeper than ${MAX_JSON_DEPTH} levels`, { field });
  }
  return value as Record<string, unknown>;
};

/** The tool definition PutTool stores, API defaults filled in (the decider checks the rest). */
export const toolDefinitionOf = (tool: ToolMessage): ToolDefinition => {
  if (tool.inputSchemaJson.trim() === '') {
    throw new ValidationError('tool.inputSchemaJson is required', { field: 'tool.inputSchemaJson' });
  }
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: jsonObject(tool.inputSchemaJson, 'tool.inputSchemaJson'),
    kind: (tool.kind || 'webhook') as ToolDefinition['kind'],
    url: tool.url,
    ...outputSchemaOf(tool.outputSchemaJson),
    approval: approvalOfText(tool.approval),
    roles: [...tool.roles] as KeyRole[],
    phases: [...tool.phases],
    timeoutMs:
      tool.timeoutMs || (tool.kind === 'client' ? DEFAULT_CLIENT_TOOL_TIMEOUT_MS : DEFAULT_TOOL_TIMEOUT_MS),
    ...memoryOf(tool.memoryJson),
    ...(tool.affects.length > 0 ? { affects: [...new Set(tool.affects)] } : {}),
    ...(tool.userRoles.length > 0 ? { userRoles: [...new Set(tool.userRoles)] } : {}),
  };
};

/**
 * A client's answer as SubmitToolResult carries it: ok with its result (JSON text; absent:
 * null), or an error the model reads (`client_error` with the client's message).
 */
export const clientAnswerOf = (
  ok: boolean,
  resultJson: string | undefined,
  errorMessage: string | undefined,
): { ok: boolean; result?: unknown; error?: { code: string; message: string } } => {
  if (!ok) return { ok, error: { code: 'client_error', message: errorMessage || 'the client tool failed' } };
  if (resultJson === undefined || resultJson === '') return { ok, result: null };
  try {
    return { ok, result: JSON.parse(resultJson) as unknown };
  } catch {
    throw new ValidationError('result is not valid JSON', { field: 'result' });
  }
};

/** A client tool's time limit when PutTool gives none (API "Client tools": 90 s). */
export const DEFAULT_CLIENT_TOOL_TIMEOUT_MS = 90_000;

/** A client tool's result schema from PutTool's `outputSchemaJson` (empty: none). */
const outputSchemaOf = (json: string): { outputSchema?: Record<string, unknown> } =>
  json.trim() === '' ? {} : { outputSchema: jsonObject(json, 'outputSchema') };

/** A tool's memory declarations from PutTool's `memoryJson`, checked (JSONPaths), naming the field. */
const memoryOf = (json: string): { memory?: MemoryDeclaration[] } => {
  if (json.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw new ValidationError('memory must be a JSON list', { field: 'memory' });
  }
  if (!Array.isArray(value)) throw new ValidationError('memory must be a list', { field: 'memory' });
  const memory = value as MemoryDeclaration[];
  checkMemory(memory);
  return memory.length === 0 ? {} : { memory };
};

/**
 * A tool's approval as the proto's `approval` string carries it: the word, or a policy object as
 * JSON text (`{"when":…}`); empty means never. Text that is neither is kept as it is for the
 * decider to refuse, naming the field.
 */
export const approvalOfText = (text: string): ToolDefinition['approval'] => {
  if (!text.trimStart().startsWith('{')) return (text || 'never') as ToolDefinition['approval'];
  try {
    return JSON.parse(text) as ToolDefinition['approval'];
  } catch {
    throw new ValidationError('approval is not valid JSON', { field: 'approval' });
  }
};

/** The proto text of a tool's approval. */
export const approvalText = (approval: ToolDefinition['approval']): string =>
  typeof approval === 'string' ? approval : JSON.stringify(approval);

/** A stored tenant tool as ListTools and PutTool answer it. */
export const toolMessage = (tool: ToolDefinition): ToolMessage => ({
  name: tool.name,
  description: tool.description,
  inputSchemaJson: JSON.stringify(tool.inputSchema),
  kind: tool.kind,
  url: tool.url,
  approval: approvalText(tool.approval),
  roles: [...tool.roles],
  phases: [...tool.phases],
  timeoutMs: tool.timeoutMs,
  builtin: false,
  memoryJson: tool.memory ? JSON.stringify(tool.memory) : '',
  affects: [...(tool.affects ?? [])],
  outputSchemaJson: tool.outputSchema ? JSON.stringify(tool.outputSchema) : '',
  userRoles: [...(tool.userRoles ?? [])],
});

/** A built-in tool as ListTools answers it: callable by any role in any phase, never approved. */
export const builtinToolMessage = (tool: BuiltinToolInfo): ToolMessage => ({
  name: tool.name,
  description: tool.description,
  inputSchemaJson: JSON.stringify(tool.inputSchema),
  kind: 'builtin',
  url: '',
  approval: 'never',
  roles: [],
  phases: [],
  timeoutMs: 0,
  builtin: true,
  memoryJson: '',
  affects: [],
  outputSchemaJson: '',
  userRoles: [],
});

const phasesOf = (text: string): AgentPhases | undefined => {
  if (text.trim() === '') return undefined;
  const value = jsonObject(text, 'agent.phasesJson');
  const { initial, transitions } = value;
  if (typeof initial !== 'string' || initial === '') {
    throw new ValidationError('agent.phasesJson: initial must be a non-empty string', {
      field: 'agent.phasesJson',
    });
  }
  const valid =
    Array.isArray(transitions) &&
    transitions.every((t: unknown) => {
      if (typeof t !== 'object' || t === null) return false;
      const { from, tool, to } = t as Record<string, unknown>;
      return (
        typeof tool === 'string' && typeof to === 'string' && (from === undefined || typeof from === 'string')
      );
    });
  if (!valid) {
    throw new ValidationError(
      'agent.phasesJson: transitions must be a list of { "from"?: string, "tool": string, "to": string }',
      { field: 'agent.phasesJson' },
    );
  }
  return {
    initial,
    transitions: (transitions as Array<{ from?: string; tool: string; to: string }>).map(
      ({ from, tool, to }) => ({
        ...(from === undefined ? {} : { from }),
        tool,
        to,
      }),
    ),
  };
};

/** The agent definition PutAgent stores, API defaults filled in (the decider checks the rest). */
export const agentDefinitionOf = (agent: AgentMessage): AgentDefinition => {
  const phases = phasesOf(agent.phasesJson);
  const defaulted = defaultedFieldsOf(agent.fromDefaults ?? []);
  // The agent's own temperature: one it takes from the defaults may meet any model.
  const ownTemperature = defaulted.fromDefaults?.includes('temperature') ? undefined : agent.temperature;
  return {
    agentId: agent.agentId,
    model: agent.model,
    instructions: agent.instructions,
    tools: [...agent.tools],
    maxSteps: agent.maxSteps || DEFAULT_MAX_STEPS,
    temperature: agent.temperature,
    toolResultMaxChars: agent.toolResultMaxChars || DEFAULT_TOOL_RESULT_MAX_CHARS,
    ...(phases ? { phases } : {}),
    ...agentOptionsOf(agent.model, agent.optionsJson, agent.tools, ownTemperature),
    ...defaulted,
  };
};

/** A stored agent as PutAgent, GetAgent and ListAgents answer it. */
export const agentMessage = (agent: AgentDefinition): AgentMessage => ({
  agentId: agent.agentId,
  model: agent.model,
  instructions: agent.instructions,
  tools: [...agent.tools],
  maxSteps: agent.maxSteps,
  temperature: agent.temperature,
  toolResultMaxChars: agent.toolResultMaxChars,
  phasesJson: agent.phases ? JSON.stringify(agent.phases) : '',
  optionsJson: agent.options ? JSON.stringify(agent.options) : '',
  fromDefaults: [...(agent.fromDefaults ?? [])],
});
