import type { EventStore, RecordedEvent, WatchedStreams } from '@keel/core';
import { isEvent, streamName } from '@keel/core';
import type {
  HookConfigured,
  HookDefinition,
  HookDeleted,
  McpServerConfigured,
  McpServerDefinition,
  McpServerDeleted,
  SealedSecret,
  ToolConfigured,
  ToolDefinition as TenantToolDefinition,
  WebhookSecretRotated,
} from '@keel/events';
import { TENANT_CONFIG_CATEGORY } from '@keel/events';
import { BUILTIN_TOOLS } from '@keel/tooling';
import type { BuiltinTool } from '@keel/tooling';
import type { ToolDefinition } from '../execution/index.js';

/** What the tools service needs of a tenant's configuration: its tools and its sealed webhook secret. */
export interface TenantTools {
  /** Version of the tenant configuration stream this state was folded up to (0: no events). */
  version: number;
  /** The tenant's own tools by name, as last configured. */
  tools: Readonly<Record<string, TenantToolDefinition>>;
  /** The current webhook signing secret, still sealed (opened only when a call is signed). */
  webhookSecret?: SealedSecret;
  /** The tenant's MCP servers by name, with the tools they listed. */
  mcpServers: Readonly<Record<string, McpServerDefinition>>;
  /** The tenant's hooks by name (API.md "Hooks"). */
  hooks: Readonly<Record<string, HookDefinition>>;
}

/** The state before any configuration event. */
export const emptyTenantTools = (): TenantTools => ({ version: 0, tools: {}, mcpServers: {}, hooks: {} });

/**
 * Folds one tenant configuration event. Events this service does not need (agents, providers)
 * only move the version; a later version of a stream never changes what an earlier one said.
 */
export const evolveTenantTools = (state: TenantTools, event: RecordedEvent): TenantTools => {
  const version = Math.max(state.version, event.version);
  if (isEvent<ToolConfigured>(event, 'ToolConfigured')) {
    const { tool } = event.data;
    return { ...state, version, tools: { ...state.tools, [tool.name]: tool } };
  }
  if (isEvent<WebhookSecretRotated>(event, 'WebhookSecretRotated')) {
    return { ...state, version, webhookSecret: event.data.secret };
  }
  if (isEvent<McpServerConfigured>(event, 'McpServerConfigured')) {
    const { server } = event.data;
    return { ...state, version, mcpServers: { ...state.mcpServers, [server.name]: server } };
  }
  if (isEvent<McpServerDeleted>(event, 'McpServerDeleted')) {
    const kept = Object.entries(state.mcpServers).filter(([name]) => name !== event.data.name);
    return { ...state, version, mcpServers: Object.fromEntries(kept) };
  }
  return { ...evolveHooks(state, event), version };
};

/** Folds the hook events (the tools service delivers to hooks). */
const evolveHooks = (state: TenantTools, event: RecordedEvent): TenantTools => {
  if (isEvent<HookConfigured>(event, 'HookConfigured')) {
    const { hook } = event.data;
    return { ...state, hooks: { ...state.hooks, [hook.name]: hook } };
  }
  if (isEvent<HookDeleted>(event, 'HookDeleted')) {
    const kept = Object.entries(state.hooks).filter(([name]) => name !== event.data.name);
    return { ...state, hooks: Object.fromEntries(kept) };
  }
  return state;
};

/** A tool as the tools service resolved it for one call. */
export type ResolvedTool =
  | { kind: 'builtin'; definition: ToolDefinition }
  | { kind: 'webhook'; definition: ToolDefinition; webhookSecret?: SealedSecret }
  | { kind: 'mcp'; definition: ToolDefinition; server: string; headers?: SealedSecret };

/**
 * The tool a call names: a built-in first (their names are reserved for every tenant), else the
 * tenant's own definition; undefined when neither exists.
 */
export const resolveTool = (
  name: string,
  tenant: TenantTools,
  builtins: readonly BuiltinTool[] = BUILTIN_TOOLS,
): ResolvedTool | undefined => {
  const builtin = builtins.find((b) => b.name === name);
  if (builtin) {
    return {
      kind: 'builtin',
      definition: {
        name: builtin.name,
        kind: 'builtin',
        inputSchema: builtin.inputSchema,
        timeoutMs: BUILTIN_TIMEOUT_MS,
        approval: 'never',
      },
    };
  }
  const own = Object.hasOwn(tenant.tools, name) ? tenant.tools[name] : undefined;
  if (!own) return resolveMcpTool(name, tenant);
  return {
    kind: 'webhook',
    definition: {
      name: own.name,
      kind: 'webhook',
      inputSchema: own.inputSchema,
      url: own.url,
      timeoutMs: own.timeoutMs,
      approval: own.approval,
    },
    ...(tenant.webhookSecret ? { webhookSecret: tenant.webhookSecret } : {}),
  };
};

/** `<server>__<tool>` of one of the tenant's MCP servers (a server name has no `_`). */
const resolveMcpTool = (name: string, tenant: TenantTools): ResolvedTool | undefined => {
  const at = name.indexOf('__');
  if (at <= 0) return undefined;
  const serverName = name.slice(0, at);
  const server = Object.hasOwn(tenant.mcpServers, serverName) ? tenant.mcpServers[serverName] : undefined;
  const tool = server?.tools.find((t) => t.name === name.slice(at + 2));
  if (!server || !tool) return undefined;
  return {
    kind: 'mcp',
    server: server.name,
    definition: {
      name,
      kind: 'mcp',
      inputSchema: tool.inputSchema,
      url: server.url,
      timeoutMs: server.timeoutMs,
      approval: server.approval,
      mcp: { tool: tool.name, retryUnknown: server.retryUnknown },
    },
    ...(server.headers ? { headers: server.headers } : {}),
  };
};

/** Built-ins run in process and finish at once; the field only matters to webhooks. */
const BUILTIN_TIMEOUT_MS = 10_000;

/** What the cache asks of the process's `WatchedStreams` (infra.watched). */
export type TenantWatch = Pick<WatchedStreams, 'enabled' | 'watch' | 'verified' | 'isCurrentAt'>;

/**
 * Tenants' tool configuration, folded from `tenantconfig-<tenantId>` and cached per tenant with
 * the version it was folded to.
 *
 * With `watched` (the process's WatchedStreams), a cached fold is used without any read while the
 * bus vouches for it (`isCurrentAt`: the stream was watched before the fold's last read, no newer
 * event has arrived since, and that read is younger than the watch's max age); otherwise the
 * events after the cached version are read (usually none). The trade-off: a tool changed through
 * another instance (the agent service writes this stream) is used once its event arrives on the
 * bus — a millisecond or two after its commit, by the writer's fast publish or else the relay —
 * not by the very next lookup; a publish missed while NATS was unreachable delays it by at most the
 * max age. Lookups of one tenant that overlap then share one read. Without `watched` (or when the
 * bus does not watch: fast path off) every lookup reads the tail, so a change is seen by the next
 * lookup.
 */
export class TenantToolsCache {
  readonly #store: EventStore;
  readonly #watched: TenantWatch | undefined;
  readonly #maxTenants: number;
  readonly #cache = new Map<string, TenantTools>();
  readonly #loading = new Map<string, Promise<TenantTools>>();

  constructor(store: EventStore, options: { maxTenants?: number; watched?: TenantWatch } = {}) {
    this.#store = store;
    this.#watched = options.watched;
    this.#maxTenants = Math.max(1, options.maxTenants ?? 1000);
  }

  /** The tenant's configuration as of now (see the class comment for what "now" means). */
  get(tenantId: string): Promise<TenantTools> {
    const cached = this.#cache.get(tenantId);
    const stream = streamName(TENANT_CONFIG_CATEGORY, tenantId);
    if (cached && this.#watched?.isCurrentAt(tenantId, stream, cached.version)) {
      this.#remember(tenantId, cached);
      return Promise.resolve(cached);
    }
    if (!this.#watched?.enabled) return this.#load(tenantId, stream);
    const loading = this.#loading.get(tenantId);
    if (loading) return loading;
    const load = this.#load(tenantId, stream).finally(() => this.#loading.delete(tenantId));
    this.#loading.set(tenantId, load);
    return load;
  }

  /** Watches the stream, then reads the events after the cached version and folds them. */
  async #load(tenantId: string, stream: string): Promise<TenantTools> {
    const mark = await this.#watched?.watch(tenantId, stream);
    const cached = this.#cache.get(tenantId) ?? emptyTenantTools();
    const newer = await this.#store.read(tenantId, stream, { fromVersion: cached.version + 1 });
    // Another lookup of the same tenant (without `watched`) may have folded further meanwhile.
    const current = this.#cache.get(tenantId);
    let state = current && current.version > cached.version ? current : cached;
    for (const event of newer) if (event.version > state.version) state = evolveTenantTools(state, event);
    this.#watched?.verified(tenantId, stream, newer.at(-1)?.version ?? cached.version, mark);
    this.#remember(tenantId, state);
    return state;
  }

  /** Re-inserting keeps the map in least-recently-used order; the oldest entry goes first. */
  #remember(tenantId: string, state: TenantTools): void {
    this.#cache.delete(tenantId);
    this.#cache.set(tenantId, state);
    if (this.#cache.size > this.#maxTenants) {
      const oldest = this.#cache.keys().next();
      if (!oldest.done) this.#cache.delete(oldest.value);
    }
  }
}
