import { ownValue } from '@keel/core';
import type { ToolApproval } from '@keel/events';
import { offeredMcpTools } from '../tenant-config/mcp-servers.js';
import type { TenantConfig } from '../tenant-config/tenant-config.decider.js';
import type { GuardedTool } from '../guard/tool-guard.js';
import type { PromptTool } from '../prompt/prompt.js';

/** A built-in tool as the agent must know it (the tools service executes it). */
export interface BuiltinToolInfo {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** What the agent needs of tools: the built-ins it may bind, and a JSON-schema check of arguments. */
export interface ToolCatalog {
  builtins: BuiltinToolInfo[];
  validate(schema: Record<string, unknown>, args: unknown): Array<{ path: string; message: string }>;
}

/**
 * A tool of an agent, resolved for both the prompt and the guard; its approval is the policy
 * (judgeToolCall resolves it per call to the guard's never or always).
 */
export type ResolvedTool = PromptTool &
  Omit<GuardedTool, 'approval'> & {
    approval: ToolApproval;
    affects?: string[];
    /** A client tool: the connected client runs its calls within `timeoutMs`. */
    client?: { timeoutMs: number };
  };

/**
 * The tools an agent has, from the tenant's definitions, the built-ins and its MCP servers'
 * tools (`<server>__*` expanded); missing ones are skipped.
 */
export const resolveTools = (names: string[], config: TenantConfig, catalog: ToolCatalog): ResolvedTool[] =>
  names.flatMap((name): ResolvedTool[] => {
    const mcp = offeredMcpTools([name], config.mcpServers);
    if (mcp.length > 0) {
      return mcp.map(({ name: offered, server, tool }) => ({
        name: offered,
        description: tool.description,
        inputSchema: tool.inputSchema,
        approval: server.approval,
        roles: server.roles,
        phases: [],
        ...(server.userRoles && server.userRoles.length > 0 ? { userRoles: server.userRoles } : {}),
        ...(server.affects && server.affects.length > 0 ? { affects: server.affects } : {}),
      }));
    }
    const own = ownValue(config.tools, name);
    if (own) {
      return [
        {
          name,
          description: own.description,
          inputSchema: own.inputSchema,
          approval: own.approval,
          roles: own.roles,
          phases: own.phases,
          ...(own.userRoles && own.userRoles.length > 0 ? { userRoles: own.userRoles } : {}),
          ...(own.affects && own.affects.length > 0 ? { affects: own.affects } : {}),
          ...(own.kind === 'client' ? { client: { timeoutMs: own.timeoutMs } } : {}),
        },
      ];
    }
    const builtin = catalog.builtins.find((b) => b.name === name);
    return builtin ? [{ ...builtin, approval: 'never', roles: [], phases: [] }] : [];
  });
