// Bodies of the tenant configuration routes (API.md "Tenant configuration"), checked for shape and
// types here; the agent service checks the meaning (names, URLs, ranges, known tools).
import type { Agent, Tool } from '@keel/proto/keel/agent/v1/agent';
import { isEndUserRole } from '@keel/events';
import { approvalTextOf } from './approval-field.js';
import {
  fail,
  objectWith,
  optionalIntegerIn,
  optionalJsonObject,
  optionalNumberIn,
  optionalString,
  optionalStrings,
  optionalWord,
} from './request-fields.js';
import { AGENT_OPTION_FIELDS, agentOptionsJson } from '../models/agent-options.js';
import { memoryJsonOf } from '../models/tool-memory.js';
import { DEFAULTED_FIELDS } from '@keel/events';

/** A tool's `timeoutMs` when the body leaves it out (API.md's example), and its range. */
export const TOOL_TIMEOUT_MS = { default: 10_000, min: 100, max: 120_000 } as const;
/** An agent's `maxSteps` when the body leaves it out (API.md's example), and its range. */
export const MAX_STEPS = { default: 8, min: 1, max: 100 } as const;
/** An agent's `toolResultMaxChars` when the body leaves it out, and its range. */
export const TOOL_RESULT_MAX_CHARS = { default: 8_000, min: 100, max: 1_000_000 } as const;
/** Largest `inputSchema` (and agent `phases`) as JSON text. */
export const MAX_SCHEMA_BYTES = 64 * 1024;
/** Most tools an agent may list. */
export const MAX_AGENT_TOOLS = 128;

/** Providers a tenant may configure (API.md). */
export const PROVIDERS = ['openai', 'anthropic', 'google', 'ollama'] as const;

/** PutProvider's fields, from `PUT /v1/providers/{provider}`. */
export interface ProviderRequest {
  provider: string;
  apiKey?: string;
  baseUrl?: string;
}

/** keel.agent.v1.Tool as PutTool takes it (`builtin` is the agent's to say). */
export type ToolMessage = Omit<Tool, 'builtin'>;

/** keel.agent.v1.Agent as PutAgent takes it. */
export type AgentMessage = Agent;

/** Checks `PUT /v1/providers/{provider}` `{ apiKey?, baseUrl? }`. */
export const parsePutProvider = (provider: string, body: unknown): ProviderRequest => {
  if (!(PROVIDERS as readonly string[]).includes(provider)) {
    fail('provider', `provider must be one of ${PROVIDERS.join(', ')}`);
  }
  const object = objectWith(body === undefined ? {} : body, ['apiKey', 'baseUrl']);
  const apiKey = optionalString(object.apiKey, 'apiKey', 4096);
  const baseUrl = optionalString(object.baseUrl, 'baseUrl', 2048);
  return { provider, ...(apiKey ? { apiKey } : {}), ...(baseUrl ? { baseUrl } : {}) };
};

/** Checks `PUT /v1/tools/{name}`'s body (API.md) and maps it to the tool message. */
export const parsePutTool = (name: string, body: unknown): ToolMessage => {
  const object = objectWith(body, [
    'description',
    'inputSchema',
    'kind',
    'url',
    'approval',
    'roles',
    'phases',
    'timeoutMs',
    'memory',
    'affects',
    'outputSchema',
    'userRoles',
  ]);
  const inputSchema = optionalJsonObject(object.inputSchema, 'inputSchema', MAX_SCHEMA_BYTES);
  if (inputSchema === undefined) fail('inputSchema', 'inputSchema is required (a JSON schema object)');
  return {
    name,
    description: optionalString(object.description, 'description', 2000) ?? '',
    inputSchemaJson: JSON.stringify(inputSchema),
    ...toolKindOf(object),
    approval: approvalTextOf(object.approval),
    roles: optionalStrings(object.roles, 'roles', 3, 16) ?? [],
    phases: optionalStrings(object.phases, 'phases', 50, 64) ?? [],
    memoryJson: memoryJsonOf(object.memory),
    affects: affectsOf(object.affects),
    userRoles: userRolesOf(object.userRoles),
  };
};

/** Most end-user roles a tool's (or MCP server's) `userRoles` may list. */
export const MAX_USER_ROLES = 20;

/**
 * A tool's (or MCP server's) `userRoles` (API.md "The end user"): end-user role words
 * (`X-Keel-User-Role`), unique, in order.
 */
export const userRolesOf = (value: unknown, field = 'userRoles'): string[] => {
  if (value === undefined) return [];
  const message = `${field} must be a list of at most ${MAX_USER_ROLES} roles (1 to 64 letters, digits, _ or -)`;
  if (!Array.isArray(value) || value.length > MAX_USER_ROLES) return fail(field, message);
  return [...new Set(value.map((item: unknown) => (isEndUserRole(item) ? item : fail(field, message))))];
};

/** A client tool's `timeoutMs` (its calls' deadline) when the body leaves it out, and its range. */
export const CLIENT_TOOL_TIMEOUT_MS = { default: 90_000, min: 100, max: 600_000 } as const;

/**
 * What a tool's kind decides: a webhook has a `url` and a short `timeoutMs`; a client tool
 * (API.md "Client tools") has no url, a deadline up to 600,000 ms and may have an `outputSchema`.
 */
const toolKindOf = (
  object: Record<string, unknown>,
): Pick<ToolMessage, 'kind' | 'url' | 'timeoutMs' | 'outputSchemaJson'> => {
  const kind = optionalWord(object.kind, 'kind', ['webhook', 'client'] as const) ?? 'webhook';
  const { min, max, default: fallback } = kind === 'client' ? CLIENT_TOOL_TIMEOUT_MS : TOOL_TIMEOUT_MS;
  const timeoutMs = optionalIntegerIn(object.timeoutMs, 'timeoutMs', min, max) ?? fallback;
  const outputSchema = optionalJsonObject(object.outputSchema, 'outputSchema', MAX_SCHEMA_BYTES);
  if (kind === 'webhook') {
    if (outputSchema !== undefined) fail('outputSchema', 'outputSchema is only for a client tool');
    return { kind, url: optionalString(object.url, 'url', 2048) ?? '', timeoutMs, outputSchemaJson: '' };
  }
  if (object.url !== undefined) {
    fail('url', 'url is not allowed: a client tool is run by the connected client');
  }
  const outputSchemaJson = outputSchema === undefined ? '' : JSON.stringify(outputSchema);
  return { kind, url: '', timeoutMs, outputSchemaJson };
};

/** Most names a tool's `affects` may list, and the form of one (`pages`, `schema`, `cms.pages`). */
export const TOOL_AFFECTS = { maxItems: 20, name: /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/ } as const;

/** A tool's (or MCP server's) `affects` (API.md "Affected resources"): short names, unique, in order. */
export const affectsOf = (value: unknown): string[] => {
  if (value === undefined) return [];
  const message = `affects must be a list of at most ${TOOL_AFFECTS.maxItems} names (letters, digits, _ . : -; up to 64 characters)`;
  if (!Array.isArray(value) || value.length > TOOL_AFFECTS.maxItems) return fail('affects', message);
  const names = value.map((item: unknown) =>
    typeof item === 'string' && TOOL_AFFECTS.name.test(item) ? item : fail('affects', message),
  );
  return [...new Set(names)];
};

/** The tenant's defaults (`PUT /v1/defaults`): what an agent body without that field gets. */
export interface AgentDefaults {
  model?: string;
  temperature?: number;
  maxSteps?: number;
}

/**
 * Checks `PUT /v1/agents/{agentId}`'s body (API.md) and maps it to the agent message; a field
 * the body leaves out is the tenant's default, else the platform's.
 */
export const parsePutAgent = (agentId: string, body: unknown, defaults: AgentDefaults = {}): AgentMessage => {
  const object = objectWith(body, [
    'model',
    'instructions',
    'tools',
    'maxSteps',
    'temperature',
    'toolResultMaxChars',
    'phases',
    ...AGENT_OPTION_FIELDS,
  ]);
  const model = optionalString(object.model, 'model', 200) ?? defaults.model;
  if (model === undefined || model.trim() === '') {
    fail('model', 'model is required (provider:model), or a default model (PUT /v1/defaults)');
  }
  const phases = optionalJsonObject(object.phases, 'phases', MAX_SCHEMA_BYTES, 4);
  const chars = TOOL_RESULT_MAX_CHARS;
  return {
    agentId,
    model: model as string,
    instructions: optionalString(object.instructions, 'instructions') ?? '',
    tools: optionalStrings(object.tools, 'tools', MAX_AGENT_TOOLS, 64) ?? [],
    maxSteps:
      optionalIntegerIn(object.maxSteps, 'maxSteps', MAX_STEPS.min, MAX_STEPS.max) ??
      defaults.maxSteps ??
      MAX_STEPS.default,
    temperature: optionalNumberIn(object.temperature, 'temperature', 0, 2) ?? defaults.temperature ?? 0,
    toolResultMaxChars:
      optionalIntegerIn(object.toolResultMaxChars, 'toolResultMaxChars', chars.min, chars.max) ??
      chars.default,
    phasesJson: phases === undefined ? '' : JSON.stringify(phases),
    optionsJson: agentOptionsJson(object),
    // Left out: the agent follows the tenant's defaults, as they are when each turn starts.
    fromDefaults: DEFAULTED_FIELDS.filter((field) => object[field] === undefined),
  };
};
