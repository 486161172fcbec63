import type { EventData } from '@keel/core';
import type { AgentPhases } from './conversation-events.js';

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

/** A tenant tool as stored (API.md `PUT /v1/tools/{name}`). */
export interface ToolDefinition {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  kind: 'webhook';
  url: string;
  approval: 'never' | 'always';
  roles: KeyRole[];
  phases: string[];
  timeoutMs: number;
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
export type TenantConfigEvent = ToolConfigured | AgentConfigured | ProviderConfigured | WebhookSecretRotated;
