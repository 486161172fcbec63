import type { EventData } from '@keel/core';
import type { AgentPhases } from './conversation-events.js';
import type { HookConfigured, HookDeleted } from './hook-events.js';
import type { AgentOptions, DefaultedField, MemoryDeclaration } from './model-events.js';

/** Category of the tenant configuration streams: `tenantconfig-<tenantId>`. */
export const TENANT_CONFIG_CATEGORY = 'tenantconfig';

/** A secret sealed with AES-256-GCM under the platform's master key; never stored or sent in clear. */
export interface SealedSecret {
  v: 1;
  iv: string;
  tag: string;
  data: string;
}

/** Roles of tenant keys. */
export type KeyRole = 'admin' | 'editor' | 'viewer';

/**
 * Whether a call needs a person's approval: never, always, or when its arguments match `when`
 * (a JSON Schema), asking with `message` (`{{args.<path>}}` filled).
 */
export type ToolApproval =
  'never' | 'always' | { when: Record<string, unknown>; message?: string; exceptUserRoles?: string[] };

/** A tenant tool as stored (API.md `PUT /v1/tools/{name}`). */
export interface ToolDefinition {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  /** `webhook`: the tools service POSTs `url`; `client`: the connected client runs it (no url). */
  kind: 'webhook' | 'client';
  /** The webhook's URL; empty for a client tool. */
  url: string;
  approval: ToolApproval;
  roles: KeyRole[];
  phases: string[];
  timeoutMs: number;
  /** What its results name, for the conversation's working memory. */
  memory?: MemoryDeclaration[];
  /** The resources its successful calls change (API `affects`: a turn reports them as `affected`). */
  affects?: string[];
  /** A client tool's result schema (JSON Schema): an answer off it is refused. */
  outputSchema?: Record<string, unknown>;
  /** End-user roles (`X-Keel-User-Role`) in whose turns it is offered and run; absent: every end user. */
  userRoles?: string[];
}

/** An agent as stored (API.md `PUT /v1/agents/{agentId}`). */
export interface AgentDefinition {
  agentId: string;
  /** `provider:model`, e.g. `openai:gpt-4o-mini`. */
  model: string;
  instructions: string;
  tools: string[];
  maxSteps: number;
  temperature: number;
  /** Characters of a tool result the model is sent; the full result stays in the log. */
  toolResultMaxChars: number;
  phases?: AgentPhases;
  /** Model options: provider options, fallbacks, prompt cache, context policy (model-events.ts). */
  options?: AgentOptions;
  /**
   * The fields its PUT left out: a turn takes them from the tenant's defaults as they are when it
   * starts (the stored value, what they gave when it was written, serves while the tenant has none).
   */
  fromDefaults?: DefaultedField[];
}

/** Model providers a tenant can configure. */
export const PROVIDERS = ['openai', 'anthropic', 'google', 'ollama', 'demo'] as const;
/** One of PROVIDERS. */
export type Provider = (typeof PROVIDERS)[number];

/** A tool was created or replaced. */
export type ToolConfigured = EventData<'ToolConfigured', { tool: ToolDefinition; at: string }>;

/** An agent was created or replaced. */
export type AgentConfigured = EventData<'AgentConfigured', { agent: AgentDefinition; at: string }>;

/** A provider's credentials were set (the API key sealed). */
export type ProviderConfigured = EventData<
  'ProviderConfigured',
  { provider: Provider; apiKey?: SealedSecret; baseUrl?: string; at: string }
>;

/** The tenant's webhook signing secret was created or rotated (sealed). */
export type WebhookSecretRotated = EventData<'WebhookSecretRotated', { secret: SealedSecret; at: string }>;

/** Every event of a tenant configuration stream. */
export type TenantConfigEvent =
  | ToolConfigured
  | AgentConfigured
  | ProviderConfigured
  | WebhookSecretRotated
  | TeamConfigured
  | TeamDeleted
  | McpServerConfigured
  | McpServerDeleted
  | HookConfigured
  | HookDeleted;

/** A tool an MCP server listed (its name on the server; agents call it `<server>__<name>`). */
export interface McpToolDefinition {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** An MCP server as stored (API.md `PUT /v1/mcp-servers/{name}`), with the tools listed at PUT or refresh. */
export interface McpServerDefinition {
  name: string;
  /** The Streamable HTTP endpoint. */
  url: string;
  /** The request headers as one sealed JSON object (context `<tenantId>/mcp/<name>`); never returned. */
  headers?: SealedSecret;
  /** The names of the sealed headers (shown; their values never are). */
  headerNames?: string[];
  /** The allow-list: only these of the server's tools are offered (absent: all it lists). */
  allow?: string[];
  /** The listed tools, the allow-list applied. */
  tools: McpToolDefinition[];
  approval: ToolApproval;
  roles: KeyRole[];
  timeoutMs: number;
  /** Whether a call whose outcome a crash left unknown is sent again (else `outcome_unknown`). */
  retryUnknown: boolean;
  /** The resources every one of its tools' successful calls change (as a tool's `affects`). */
  affects?: string[];
  /** End-user roles in whose turns its tools are offered and run (as a tool's `userRoles`). */
  userRoles?: string[];
}

/** An MCP server was connected (created, replaced, or its tools refreshed). */
export type McpServerConfigured = EventData<
  'McpServerConfigured',
  { server: McpServerDefinition; at: string }
>;

/** An MCP server was removed; its tools are no longer offered or run. */
export type McpServerDeleted = EventData<'McpServerDeleted', { name: string; at: string }>;

/** How a team's members work together (API.md "Teams and runs"). */
export const TEAM_TOPOLOGIES = ['pipeline', 'parallel', 'debate', 'hierarchical', 'round_robin'] as const;
/** One of TEAM_TOPOLOGIES. */
export type TeamTopology = (typeof TEAM_TOPOLOGIES)[number];

/** How a run's output is made from its tasks' outputs. */
export const TEAM_AGGREGATIONS = ['last', 'merge', 'vote'] as const;
/** One of TEAM_AGGREGATIONS. */
export type TeamAggregation = (typeof TEAM_AGGREGATIONS)[number];

/** A member of a team: one of the tenant's agents, its role's name, and its place in the order. */
export interface TeamMember {
  agentId: string;
  role: string;
  position: number;
}

/** A team as stored (API.md `PUT /v1/teams/{teamId}`); defaults filled in. */
export interface TeamDefinition {
  teamId: string;
  topology: TeamTopology;
  members: TeamMember[];
  aggregation: TeamAggregation;
  /** The hierarchical topology's lead agent (not a member). */
  manager?: string;
  /** Rounds of debate and round_robin. */
  rounds?: number;
  timeoutMs: number;
  /** Model calls of all members of a run, at most. */
  maxSteps: number;
  /** Characters of earlier outputs passed to a member, in all. */
  contextCharLimit: number;
}

/** A team was created or replaced. */
export type TeamConfigured = EventData<'TeamConfigured', { team: TeamDefinition; at: string }>;

/** A team was deleted (runs already started go on with the definition they started with). */
export type TeamDeleted = EventData<'TeamDeleted', { teamId: string; at: string }>;
