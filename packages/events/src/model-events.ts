import type { EventData } from '@keel/core';

/** Category of a tenant's defaults stream: `tenantdefaults-<tenantId>` (API.md `PUT /v1/defaults`). */
export const TENANT_DEFAULTS_CATEGORY = 'tenantdefaults';

/** A tenant's defaults: what an agent without that field uses; an absent field was never set. */
export interface TenantDefaults {
  /** `provider:model`. */
  model?: string;
  temperature?: number;
  maxSteps?: number;
}

/** The agent fields a tenant's defaults give, to an agent whose PUT left them out. */
export const DEFAULTED_FIELDS = ['model', 'temperature', 'maxSteps'] as const;
/** One of DEFAULTED_FIELDS. */
export type DefaultedField = (typeof DEFAULTED_FIELDS)[number];

/** Defaults were set; the fields given replace the stored ones, the others stay. */
export type DefaultsConfigured = EventData<'DefaultsConfigured', { defaults: TenantDefaults; at: string }>;

/** Every event of a tenant defaults stream. */
export type TenantDefaultsEvent = DefaultsConfigured;

/** Provider options of an agent (API.md), mapped to each provider's own request fields. */
export interface ProviderOptions {
  maxOutputTokens?: number;
  reasoningEffort?: 'low' | 'medium' | 'high';
  thinkingBudgetTokens?: number;
  topP?: number;
}

/** An agent's context policy: what of older tool results goes into the prompt. */
export interface ContextPolicy {
  /** The prompt's budget in tokens (estimated); older results are stubbed until it fits. */
  maxContextTokens?: number;
  /** Tool results after the last `n` are stubbed in the prompt. */
  keepToolResults?: number;
  /** An older result longer than this is stubbed (default 4000). */
  heavyResultChars?: number;
}

/** An agent's model options (API.md "Models, defaults and agent options"); every field optional. */
export interface AgentOptions {
  providerOptions?: ProviderOptions;
  /** `provider:model` ids tried in order when the model's provider answers 429, 5xx or times out. */
  fallbackModels?: string[];
  /** Explicit cache breakpoints after the stable prefix, where the provider has them. */
  promptCache?: boolean;
  /** After the first turn, one short model call titles the conversation (API.md `autoTitle`). */
  autoTitle?: boolean;
  context?: ContextPolicy;
  intents?: AgentIntent[];
  /** The JSON Schema a message's per-message `context` must match (API.md "Per-message context"). */
  contextSchema?: Record<string, unknown>;
  /** The IANA time zone `{{now}}` is filled in, in the instructions (default UTC). */
  timeZone?: string;
  /** Agents offered as sub-agent tools `agent__<agentId>` (API.md "Sub-agents"). */
  agents?: string[];
  /** The deepest chain of sub-agent conversations under this agent (at most 5, the default). */
  maxDepth?: number;
}

/** What a tool's results name (API.md working memory): JSONPaths into the result. */
export interface MemoryDeclaration {
  /** The entity's kind, e.g. `page`. */
  type: string;
  /** JSONPath to the entity's id, e.g. `$.id`. */
  id: string;
  /** JSONPath to a human label, e.g. `$.title`. */
  label?: string;
}

/** An agent's intent (API.md "Intents"): keywords that classify a user message, the tools it narrows to, its guidance. */
export interface AgentIntent {
  name: string;
  keywords: string[];
  /** The tools offered when it matches (absent: all the agent's tools). */
  tools?: string[];
  guidance?: string;
}
