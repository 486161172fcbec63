// Bodies of the tenant configuration routes (API.md "Tenant configuration"), checked for shape and
// types here; the agent service checks the meaning (names, URLs, ranges, known tools).
import {
  fail,
  objectWith,
  optionalInteger,
  optionalNumber,
  optionalObject,
  optionalString,
  optionalStrings,
  optionalWord,
} from './request-fields.js';

/** Providers a tenant may configure (API.md). */
export const PROVIDERS = ['openai', 'anthropic', 'google', 'ollama'] as const;

/** PutProvider's fields, from `PUT /v1/providers/{provider}`. */
export interface ProviderRequest {
  provider: string;
  apiKey?: string;
  baseUrl?: string;
}

/** keel.agent.v1.Tool as PutTool takes it. */
export interface ToolMessage {
  name: string;
  description: string;
  inputSchemaJson: string;
  kind: string;
  url: string;
  approval: string;
  roles: string[];
  phases: string[];
  timeoutMs: number;
}

/** keel.agent.v1.Agent as PutAgent takes it. */
export interface AgentMessage {
  agentId: string;
  model: string;
  instructions: string;
  tools: string[];
  maxSteps: number;
  temperature: number;
  toolResultMaxChars: number;
  phasesJson: string;
}

/** Checks `PUT /v1/providers/{provider}` `{ apiKey?, baseUrl? }`. */
export const parsePutProvider = (provider: string, body: unknown): ProviderRequest => {
  if (!(PROVIDERS as readonly string[]).includes(provider)) {
    fail('provider', `provider must be one of ${PROVIDERS.join(', ')}`);
  }
  const object = objectWith(body ?? {}, ['apiKey', 'baseUrl']);
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
  ]);
  const inputSchema = optionalObject(object.inputSchema, 'inputSchema');
  if (inputSchema === undefined) fail('inputSchema', 'inputSchema is required (a JSON schema object)');
  return {
    name,
    description: optionalString(object.description, 'description') ?? '',
    inputSchemaJson: JSON.stringify(inputSchema),
    kind: optionalWord(object.kind, 'kind', ['webhook'] as const) ?? 'webhook',
    url: optionalString(object.url, 'url', 2048) ?? '',
    approval: optionalWord(object.approval, 'approval', ['never', 'always'] as const) ?? 'never',
    roles: optionalStrings(object.roles, 'roles') ?? [],
    phases: optionalStrings(object.phases, 'phases') ?? [],
    timeoutMs: optionalInteger(object.timeoutMs, 'timeoutMs') ?? 0,
  };
};

/** Checks `PUT /v1/agents/{agentId}`'s body (API.md) and maps it to the agent message. */
export const parsePutAgent = (agentId: string, body: unknown): AgentMessage => {
  const object = objectWith(body, [
    'model',
    'instructions',
    'tools',
    'maxSteps',
    'temperature',
    'toolResultMaxChars',
    'phases',
  ]);
  const model = optionalString(object.model, 'model', 200);
  if (model === undefined || model.trim() === '') fail('model', 'model is required (provider:model)');
  const phases = optionalObject(object.phases, 'phases');
  return {
    agentId,
    model: model as string,
    instructions: optionalString(object.instructions, 'instructions') ?? '',
    tools: optionalStrings(object.tools, 'tools') ?? [],
    maxSteps: optionalInteger(object.maxSteps, 'maxSteps') ?? 0,
    temperature: optionalNumber(object.temperature, 'temperature') ?? 0,
    toolResultMaxChars: optionalInteger(object.toolResultMaxChars, 'toolResultMaxChars') ?? 0,
    phasesJson: phases === undefined ? '' : JSON.stringify(phases),
  };
};
