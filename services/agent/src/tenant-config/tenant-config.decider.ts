import type { Decider } from '@keel/core';
import { ValidationError, hasOwnKey, withOwn } from '@keel/core';
import type {
  AgentDefinition,
  HookDefinition,
  KeyRole,
  McpServerDefinition,
  Provider,
  SealedSecret,
  TeamDefinition,
  TenantConfigEvent,
  ToolDefinition,
} from '@keel/events';
import { PROVIDERS, SUB_AGENT_TOOL_PREFIX } from '@keel/events';
import { EgressPolicy } from '@keel/runtime/egress';
import { approvalPolicyProblem } from '@keel/tooling';
import { decideDeleteTeam, decidePutTeam } from '../team/team-rules.js';
import type { PutMcpServer } from './mcp-servers.js';
import { decideDeleteMcpServer, decidePutMcpServer, isKnownMcpTool } from './mcp-servers.js';
import { checkAffects } from './affects.js';
import { checkUserRoles } from './user-roles.js';
import { checkEndUserOptions } from './end-user-options.js';
import { checkSubAgents } from '../sub-agents/sub-agent-rules.js';
import { decideDeleteHook, decidePutHook } from './hooks.js';

/** Names of the built-in tools: reserved, a tenant tool cannot shadow one. */
export const BUILTIN_TOOL_NAMES = ['current_time', 'calculator'] as const;

const TOOL_NAME = /^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/;
const AGENT_ID = /^[a-zA-Z0-9][a-zA-Z0-9_-]{0,63}$/;
const ROLES: readonly KeyRole[] = ['admin', 'editor', 'viewer'];
/**
 * Names of Object.prototype's members (`toString`, `constructor`, `valueOf` …): refused as tool
 * names and agent ids, so no client or service that keys a plain object by them meets a prototype
 * member (lookups here read own properties in any case).
 */
const PROTOTYPE_NAMES: ReadonlySet<string> = new Set(Object.getOwnPropertyNames(Object.prototype));
/** Most tools an agent may list (API.md bounds what one request may ask for). */
export const MAX_AGENT_TOOLS = 128;
/** Largest tool `inputSchema` as JSON text. */
export const MAX_SCHEMA_BYTES = 64 * 1024;
/** Most tools, and most agents, one tenant may define: its whole configuration is loaded per turn. */
export const MAX_DEFINITIONS_PER_TENANT = 500;

/** A new definition must leave the tenant within `MAX_DEFINITIONS_PER_TENANT`; replacing one always may. */
const checkRoom = (defined: object, name: string, field: string, what: string): void => {
  if (!hasOwnKey(defined, name) && Object.keys(defined).length >= MAX_DEFINITIONS_PER_TENANT) {
    fail(field, `a tenant may define at most ${MAX_DEFINITIONS_PER_TENANT} ${what}`);
  }
};

/**
 * Most bytes of definitions one tenant may hold in all (tool schemas and descriptions, agent
 * instructions and phases): the agent loads and copies a tenant's whole configuration on every
 * turn step, on the event loop every tenant shares (500 tools of 64 KiB took 250 ms a load).
 */
export const MAX_CONFIG_BYTES = 2 * 1024 * 1024;

const toolBytes = (tool: ToolDefinition): number =>
  JSON.stringify(tool.inputSchema).length + tool.description.length;
const agentBytes = (agent: AgentDefinition): number =>
  agent.instructions.length + (agent.phases ? JSON.stringify(agent.phases).length : 0);

/** The tenant's definitions in all, with `replacing` (a tool or an agent) in place of its namesake. */
const configBytesWith = (
  state: TenantConfig,
  replacing: { tool: ToolDefinition } | { agent: AgentDefinition },
): number => {
  let total = 'tool' in replacing ? toolBytes(replacing.tool) : agentBytes(replacing.agent);
  for (const [name, tool] of Object.entries(state.tools)) {
    if (!('tool' in replacing) || name !== replacing.tool.name) total += toolBytes(tool);
  }
  for (const [id, agent] of Object.entries(state.agents)) {
    if (!('agent' in replacing) || id !== replacing.agent.agentId) total += agentBytes(agent);
  }
  return total;
};

/** A tenant's configuration, rebuilt from its stream. Secrets stay sealed in it. */
export interface TenantConfig {
  tools: Record<string, ToolDefinition>;
  agents: Record<string, AgentDefinition>;
  /** Teams of the tenant's agents (API.md "Teams and runs"). */
  teams: Record<string, TeamDefinition>;
  /** MCP servers and the tools they listed (API.md "Tool sources and policies"). */
  mcpServers: Record<string, McpServerDefinition>;
  /** Hooks by name (absent in snapshots taken before hooks existed). */
  hooks?: Record<string, HookDefinition>;
  providers: Partial<Record<Provider, { apiKey?: SealedSecret; baseUrl?: string }>>;
  webhookSecret?: SealedSecret;
}

/** Commands of the tenant configuration; secrets arrive sealed (sealing is I/O, deciders are pure). */
export type TenantConfigCommand =
  | { type: 'PutTool'; tool: ToolDefinition; at: string }
  | { type: 'PutAgent'; agent: AgentDefinition; at: string }
  | { type: 'PutProvider'; provider: string; apiKey?: SealedSecret; baseUrl?: string; at: string }
  | { type: 'RotateWebhookSecret'; secret: SealedSecret; at: string }
  | { type: 'PutTeam'; team: TeamDefinition; at: string }
  | { type: 'DeleteTeam'; teamId: string; at: string }
  | { type: 'PutMcpServer'; put: PutMcpServer; at: string }
  | { type: 'DeleteMcpServer'; name: string; at: string }
  | { type: 'PutHook'; hook: HookDefinition; at: string }
  | { type: 'DeleteHook'; name: string; at: string };

const fail = (field: string, message: string): never => {
  throw new ValidationError(message, { field });
};

/** A tenant-aimed URL: http(s), no credentials, and no host the egress policy refuses as written. */
const checkUrl = (field: string, value: string, egress: EgressPolicy): void => {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return fail(field, `${field} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') fail(field, `${field} must be http or https`);
  if (url.username || url.password) fail(field, `${field} must not carry credentials`);
  // A literal address or `localhost` is refused now; a name is checked again at every call.
  const refusal = egress.refusalOfUrl(field, url);
  if (refusal !== undefined) fail(field, refusal);
};

/**
 * Providers whose client cannot take the guarded fetch: the Google client always calls the global
 * `fetch`, so a tenant `baseUrl` could not be held to the egress policy and is refused.
 */
const NO_TENANT_BASE_URL: readonly string[] = ['google'];

/** A client call's longest deadline (API "Client tools": at most 600,000 ms). */
const MAX_CLIENT_TIMEOUT_MS = 600_000;

/**
 * A webhook tool has a URL the egress policy lets through; a client tool (the connected client
 * runs it) has none, and only it may declare an `outputSchema`.
 */
const checkKind = (tool: ToolDefinition, egress: EgressPolicy): void => {
  if (tool.kind === 'client') {
    if (tool.url) fail('url', 'a client tool has no url (the connected client runs it)');
    if (tool.outputSchema !== undefined && JSON.stringify(tool.outputSchema).length > MAX_SCHEMA_BYTES) {
      fail('outputSchema', `outputSchema must be at most ${MAX_SCHEMA_BYTES} bytes as JSON`);
    }
    return;
  }
  if (tool.kind !== 'webhook') {
    fail('kind', 'kind must be "webhook" or "client" (built-in tools cannot be defined)');
  }
  if (tool.outputSchema !== undefined) fail('outputSchema', 'only a client tool has an outputSchema');
  checkUrl('url', tool.url, egress);
};

const checkTool = (tool: ToolDefinition, egress: EgressPolicy): void => {
  if (!TOOL_NAME.test(tool.name)) fail('name', 'name must match ^[a-zA-Z][a-zA-Z0-9_-]{0,63}$');
  if (PROTOTYPE_NAMES.has(tool.name)) fail('name', `"${tool.name}" is reserved`);
  if ((BUILTIN_TOOL_NAMES as readonly string[]).includes(tool.name)) {
    fail('name', `"${tool.name}" is a built-in tool's name and is reserved`);
  }
  if (tool.name.startsWith(SUB_AGENT_TOOL_PREFIX)) {
    fail('name', `"${tool.name}" is reserved: ${SUB_AGENT_TOOL_PREFIX}<id> names a sub-agent`);
  }
  if (
    typeof tool.description !== 'string' ||
    tool.description.length === 0 ||
    tool.description.length > 2_000
  ) {
    fail('description', 'description must be 1 to 2000 characters');
  }
  if (tool.inputSchema?.type !== 'object')
    fail('inputSchema', 'inputSchema must be a JSON schema with type "object"');
  checkKind(tool, egress);
  const approvalProblem = approvalPolicyProblem(tool.approval);
  if (approvalProblem) fail(approvalProblem.field, approvalProblem.message);
  if (JSON.stringify(tool.inputSchema).length > MAX_SCHEMA_BYTES) {
    fail('inputSchema', `inputSchema must be at most ${MAX_SCHEMA_BYTES} bytes as JSON`);
  }
  if (!Array.isArray(tool.phases) || tool.phases.length > 50 || tool.phases.some((p) => p.length > 64)) {
    fail('phases', 'phases must be at most 50 phase names of at most 64 characters');
  }
  if (!Array.isArray(tool.roles) || tool.roles.some((r) => !ROLES.includes(r))) {
    fail('roles', 'roles must be a list of admin, editor, viewer');
  }
  const maxTimeoutMs = tool.kind === 'client' ? MAX_CLIENT_TIMEOUT_MS : 120_000;
  if (!Number.isInteger(tool.timeoutMs) || tool.timeoutMs < 100 || tool.timeoutMs > maxTimeoutMs) {
    fail('timeoutMs', `timeoutMs must be an integer from 100 to ${maxTimeoutMs}`);
  }
  checkAffects(tool.affects);
  checkUserRoles(tool.userRoles);
};

/** Every tool an agent names exists: the tenant's, a built-in, or a configured MCP server's. */
const checkAgentTools = (tools: readonly string[], state: TenantConfig): void => {
  const unknown = tools.filter(
    (t) =>
      !hasOwnKey(state.tools, t) &&
      !(BUILTIN_TOOL_NAMES as readonly string[]).includes(t) &&
      !isKnownMcpTool(t, state.mcpServers),
  );
  if (unknown.length > 0) {
    const shown = unknown.slice(0, 5).map((t) => (t.length > 64 ? `${t.slice(0, 64)}…` : t));
    fail(
      'tools',
      `unknown tools: ${shown.join(', ')}${unknown.length > 5 ? ` and ${unknown.length - 5} more` : ''}`,
    );
  }
};

/** An agent's phases: an initial phase, bounded transitions on tools the agent has. */
const checkPhases = (phases: NonNullable<AgentDefinition['phases']>, tools: readonly string[]): void => {
  const named = new Set([
    phases.initial,
    ...phases.transitions.flatMap((t) => [t.to, ...(t.from ? [t.from] : [])]),
  ]);
  if (!phases.initial) fail('phases.initial', 'phases.initial is required');
  if (phases.transitions.length > 200) fail('phases.transitions', 'at most 200 transitions');
  const badTool = phases.transitions.find((t) => !tools.includes(t.tool));
  if (badTool) fail('phases.transitions', `transition on "${badTool.tool}", which the agent does not have`);
  if (named.size > 50) fail('phases', 'at most 50 phases');
};

const checkAgent = (agent: AgentDefinition, state: TenantConfig): void => {
  if (!AGENT_ID.test(agent.agentId)) fail('agentId', 'agentId must match ^[a-zA-Z0-9][a-zA-Z0-9_-]{0,63}$');
  if (PROTOTYPE_NAMES.has(agent.agentId)) fail('agentId', `"${agent.agentId}" is reserved`);
  const [provider, model] = [
    agent.model.slice(0, agent.model.indexOf(':')),
    agent.model.slice(agent.model.indexOf(':') + 1),
  ];
  if (!agent.model.includes(':') || !model || !(PROVIDERS as readonly string[]).includes(provider)) {
    fail('model', `model must be provider:model with provider one of ${PROVIDERS.join(', ')}`);
  }
  if (typeof agent.instructions !== 'string' || agent.instructions.length > 100_000) {
    fail('instructions', 'instructions must be a string of at most 100000 characters');
  }
  if (!Array.isArray(agent.tools) || agent.tools.length > MAX_AGENT_TOOLS) {
    fail('tools', `tools must be a list of at most ${MAX_AGENT_TOOLS} tool names`);
  }
  checkAgentTools(agent.tools, state);
  if (new Set(agent.tools).size !== agent.tools.length) fail('tools', 'tools must not repeat');
  if (!Number.isInteger(agent.maxSteps) || agent.maxSteps < 1 || agent.maxSteps > 100) {
    fail('maxSteps', 'maxSteps must be an integer from 1 to 100');
  }
  if (!(agent.temperature >= 0 && agent.temperature <= 2))
    fail('temperature', 'temperature must be from 0 to 2');
  if (!Number.isInteger(agent.toolResultMaxChars) || agent.toolResultMaxChars < 100) {
    fail('toolResultMaxChars', 'toolResultMaxChars must be an integer of at least 100');
  }
  if (agent.phases) checkPhases(agent.phases, agent.tools);
  checkEndUserOptions(agent);
  checkSubAgents(agent, state.agents);
};

/** One command of the tenant configuration, by its type. */
type CommandOf<T extends TenantConfigCommand['type']> = Extract<TenantConfigCommand, { type: T }>;

const putTool = (
  command: CommandOf<'PutTool'>,
  state: TenantConfig,
  egress: EgressPolicy,
): TenantConfigEvent[] => {
  checkTool(command.tool, egress);
  checkRoom(state.tools, command.tool.name, 'name', 'tools');
  if (configBytesWith(state, { tool: command.tool }) > MAX_CONFIG_BYTES) {
    fail('inputSchema', `the tenant's tools and agents would exceed ${MAX_CONFIG_BYTES} bytes in all`);
  }
  return [{ type: 'ToolConfigured', data: { tool: command.tool, at: command.at } }];
};

const putAgent = (command: CommandOf<'PutAgent'>, state: TenantConfig): TenantConfigEvent[] => {
  checkAgent(command.agent, state);
  checkRoom(state.agents, command.agent.agentId, 'agentId', 'agents');
  if (configBytesWith(state, { agent: command.agent }) > MAX_CONFIG_BYTES) {
    fail('instructions', `the tenant's tools and agents would exceed ${MAX_CONFIG_BYTES} bytes in all`);
  }
  return [{ type: 'AgentConfigured', data: { agent: command.agent, at: command.at } }];
};

/** A tenant's own provider endpoint: allowed only where the key goes with it and egress allows it. */
const checkBaseUrl = (command: CommandOf<'PutProvider'>, baseUrl: string, egress: EgressPolicy): void => {
  const { provider, apiKey } = command;
  if (NO_TENANT_BASE_URL.includes(provider)) {
    fail('baseUrl', `baseUrl cannot be set for ${provider}: its client cannot be held to the egress policy`);
  }
  // ProviderConfigured replaces the whole entry, so the key must come in this same command:
  // a platform key from the environment is never sent to a tenant's endpoint. Ollama has
  // no platform key, so a tenant's Ollama server may go without one.
  if (!apiKey && provider !== 'ollama') {
    fail('apiKey', 'apiKey is required with baseUrl: the platform key is only sent to the platform endpoint');
  }
  checkUrl('baseUrl', baseUrl, egress);
};

const putProvider = (command: CommandOf<'PutProvider'>, egress: EgressPolicy): TenantConfigEvent[] => {
  const { provider, apiKey, baseUrl, at } = command;
  if (!(PROVIDERS as readonly string[]).includes(provider)) {
    fail('provider', `provider must be one of ${PROVIDERS.join(', ')}`);
  }
  if (baseUrl !== undefined) checkBaseUrl(command, baseUrl, egress);
  return [
    {
      type: 'ProviderConfigured',
      data: {
        provider: provider as Provider,
        ...(apiKey ? { apiKey } : {}),
        ...(baseUrl ? { baseUrl } : {}),
        at,
      },
    },
  ];
};

const decideTenantConfig = (
  command: TenantConfigCommand,
  state: TenantConfig,
  egress: EgressPolicy,
): TenantConfigEvent[] => {
  switch (command.type) {
    case 'PutTool':
      return putTool(command, state, egress);
    case 'PutAgent':
      return putAgent(command, state);
    case 'PutProvider':
      return putProvider(command, egress);
    case 'RotateWebhookSecret':
      return [{ type: 'WebhookSecretRotated', data: { secret: command.secret, at: command.at } }];
    case 'PutTeam':
      return decidePutTeam(command.team, state, command.at);
    case 'DeleteTeam':
      return decideDeleteTeam(command.teamId, state.teams, command.at);
    case 'PutMcpServer':
      return decidePutMcpServer(
        command.put,
        state.mcpServers,
        (field, value) => checkUrl(field, value, egress),
        command.at,
      );
    case 'DeleteMcpServer':
      return decideDeleteMcpServer(command.name, state.mcpServers, command.at);
    case 'PutHook':
      return decidePutHook(
        command.hook,
        state.hooks ?? {},
        (field, value) => checkUrl(field, value, egress),
        command.at,
      );
    case 'DeleteHook':
      return decideDeleteHook(command.name, state.hooks ?? {}, command.at);
    default: {
      const unknown: never = command;
      throw new ValidationError(`unknown command ${String((unknown as { type: unknown }).type)}`);
    }
  }
};

/** The entry of `entries` named `name` left out (a deleted team or MCP server). */
const without = <T>(entries: Record<string, T>, name: string): Record<string, T> =>
  Object.fromEntries(Object.entries(entries).filter(([key]) => key !== name));

const evolveTenantConfig = (state: TenantConfig, event: TenantConfigEvent): TenantConfig => {
  switch (event.type) {
    case 'ToolConfigured':
      return { ...state, tools: withOwn(state.tools, event.data.tool.name, event.data.tool) };
    case 'AgentConfigured':
      return { ...state, agents: withOwn(state.agents, event.data.agent.agentId, event.data.agent) };
    case 'ProviderConfigured': {
      const { provider, apiKey, baseUrl } = event.data;
      return {
        ...state,
        providers: {
          ...state.providers,
          [provider]: { ...(apiKey ? { apiKey } : {}), ...(baseUrl ? { baseUrl } : {}) },
        },
      };
    }
    case 'WebhookSecretRotated':
      return { ...state, webhookSecret: event.data.secret };
    case 'TeamConfigured':
      return { ...state, teams: withOwn(state.teams, event.data.team.teamId, event.data.team) };
    case 'TeamDeleted':
      return { ...state, teams: without(state.teams, event.data.teamId) };
    case 'McpServerConfigured': {
      const { server } = event.data;
      return { ...state, mcpServers: withOwn(state.mcpServers, server.name, server) };
    }
    case 'McpServerDeleted':
      return { ...state, mcpServers: without(state.mcpServers, event.data.name) };
    case 'HookConfigured':
      return { ...state, hooks: withOwn(state.hooks ?? {}, event.data.hook.name, event.data.hook) };
    case 'HookDeleted':
      return { ...state, hooks: without(state.hooks ?? {}, event.data.name) };
    default: {
      // An event this version does not know (a newer writer's) changes nothing it can read.
      const _unknown: never = event;
      return state;
    }
  }
};

/**
 * The tenant configuration aggregate: validates definitions, keeps secrets sealed. `egress` (the
 * `KEEL_EGRESS_ALLOW` policy) judges the URLs tenants aim; pure, it only reads literal hosts.
 */
export const createTenantConfigDecider = (
  egress: EgressPolicy = new EgressPolicy(),
): Decider<TenantConfig, TenantConfigCommand, TenantConfigEvent> => ({
  initialState: () => ({ tools: {}, agents: {}, teams: {}, mcpServers: {}, providers: {} }),
  decide: (command, state) => decideTenantConfig(command, state, egress),
  evolve: evolveTenantConfig,
});

/** The tenant configuration decider with no egress range opened (KEEL_EGRESS_ALLOW empty). */
export const tenantConfigDecider = createTenantConfigDecider();
