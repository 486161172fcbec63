import { NotFoundError, ValidationError, hasOwnKey, ownValue } from '@keel/core';
import type { KeyRole, McpServerDefinition, McpToolDefinition, TenantConfigEvent } from '@keel/events';
import { approvalPolicyProblem } from '@keel/tooling';
import { checkAffects } from './affects.js';
import { checkUserRoles } from './user-roles.js';

/*
 * MCP servers in the tenant configuration (API.md "Tool sources and policies"). Agents name a
 * server's tool `<server>__<tool>`, or all of them `<server>__*`; a server name has no `_`, so
 * the first `__` always splits a name the one way. Pure: the listing happened before the command.
 */

/** Names of MCP servers: letters, digits and `-` (no `_`: `<server>__<tool>` must split one way). */
export const MCP_SERVER_NAME = /^[a-zA-Z][a-zA-Z0-9-]{0,31}$/;
/** A tool name the models accept (the same rule as the tenant's own tools). */
const MODEL_TOOL_NAME = /^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/;
/** Most tools kept of one server. */
export const MAX_MCP_TOOLS = 200;
/** Most MCP servers of one tenant. */
export const MAX_MCP_SERVERS = 50;
/** Largest input schema of one MCP tool, as JSON. */
const MAX_SCHEMA_BYTES = 64 * 1024;
const ROLES: readonly KeyRole[] = ['admin', 'editor', 'viewer'];

/** The separator of `<server>__<tool>`. */
const SEPARATOR = '__';

/** The name agents use for `tool` of `server`. */
export const mcpToolName = (server: string, tool: string): string => `${server}${SEPARATOR}${tool}`;

/** `<server>__<tool>` split, or undefined for a name that is not an MCP tool's. */
export const splitMcpToolName = (name: string): { server: string; tool: string } | undefined => {
  const at = name.indexOf(SEPARATOR);
  if (at <= 0) return undefined;
  return { server: name.slice(0, at), tool: name.slice(at + SEPARATOR.length) };
};

const fail = (field: string, message: string): never => {
  throw new ValidationError(message, { field });
};

/** An MCP server to store: the definition with every tool the server listed, before the allow-list. */
export interface PutMcpServer {
  server: Omit<McpServerDefinition, 'tools'>;
  listed: McpToolDefinition[];
}

/** The tools kept: listed ones the allow-list names (all without one) whose agent-side name is valid. */
const keptTools = (put: PutMcpServer): McpToolDefinition[] => {
  const { server, listed } = put;
  if (server.allow !== undefined) {
    const missing = server.allow.filter((name) => !listed.some((t) => t.name === name));
    if (missing.length > 0) {
      fail('tools', `the server does not list: ${missing.slice(0, 5).join(', ')}`);
    }
  }
  return listed
    .filter((t) => server.allow === undefined || server.allow.includes(t.name))
    .filter((t) => MODEL_TOOL_NAME.test(mcpToolName(server.name, t.name)))
    .filter(
      (t) => t.inputSchema?.type === 'object' && JSON.stringify(t.inputSchema).length <= MAX_SCHEMA_BYTES,
    )
    .slice(0, MAX_MCP_TOOLS)
    .map((t) => ({ name: t.name, description: t.description.slice(0, 2_000), inputSchema: t.inputSchema }));
};

const checkServer = (server: PutMcpServer['server']): void => {
  if (!MCP_SERVER_NAME.test(server.name)) fail('name', 'name must match ^[a-zA-Z][a-zA-Z0-9-]{0,31}$');
  // Its tools would be agent__<tool>: the names of sub-agents.
  if (server.name === 'agent') fail('name', '"agent" is reserved: agent__<id> names a sub-agent');
  const approvalProblem = approvalPolicyProblem(server.approval);
  if (approvalProblem) fail(approvalProblem.field, approvalProblem.message);
  if (!Array.isArray(server.roles) || server.roles.some((r) => !ROLES.includes(r))) {
    fail('roles', 'roles must be a list of admin, editor, viewer');
  }
  if (!Number.isInteger(server.timeoutMs) || server.timeoutMs < 100 || server.timeoutMs > 120_000) {
    fail('timeoutMs', 'timeoutMs must be an integer from 100 to 120000');
  }
  if (typeof server.retryUnknown !== 'boolean') fail('retryUnknown', 'retryUnknown must be a boolean');
  checkAffects(server.affects);
  checkUserRoles(server.userRoles);
};

/**
 * `PUT /v1/mcp-servers/{name}`: the server's definition with its kept tools. `checkUrl` is the
 * tenant configuration's URL rule (http(s), no credentials, the egress policy's literal hosts).
 */
export const decidePutMcpServer = (
  put: PutMcpServer,
  servers: Record<string, McpServerDefinition>,
  checkUrl: (field: string, value: string) => void,
  at: string,
): TenantConfigEvent[] => {
  checkServer(put.server);
  checkUrl('url', put.server.url);
  if (!hasOwnKey(servers, put.server.name) && Object.keys(servers).length >= MAX_MCP_SERVERS) {
    fail('name', `a tenant may define at most ${MAX_MCP_SERVERS} MCP servers`);
  }
  const server: McpServerDefinition = { ...put.server, tools: keptTools(put) };
  return [{ type: 'McpServerConfigured', data: { server, at } }];
};

/** `DELETE /v1/mcp-servers/{name}`; an unknown server is 404. */
export const decideDeleteMcpServer = (
  name: string,
  servers: Record<string, McpServerDefinition>,
  at: string,
): TenantConfigEvent[] => {
  if (!hasOwnKey(servers, name)) throw new NotFoundError(`there is no MCP server named ${name}`);
  return [{ type: 'McpServerDeleted', data: { name, at } }];
};

/** Whether an agent's tool entry names an MCP server's tool (or `<server>__*`) the tenant has. */
export const isKnownMcpTool = (entry: string, servers: Record<string, McpServerDefinition>): boolean => {
  const split = splitMcpToolName(entry);
  const server = split && ownValue(servers, split.server);
  if (!split || !server) return false;
  return split.tool === '*' || server.tools.some((t) => t.name === split.tool);
};

/** One MCP tool as an agent offers it. */
export interface OfferedMcpTool {
  name: string;
  server: McpServerDefinition;
  tool: McpToolDefinition;
}

/** The MCP tools an agent's tool entries offer (`<server>__*` expanded, missing ones skipped). */
export const offeredMcpTools = (
  entries: readonly string[],
  servers: Record<string, McpServerDefinition>,
): OfferedMcpTool[] =>
  entries.flatMap((entry): OfferedMcpTool[] => {
    const split = splitMcpToolName(entry);
    const server = split && ownValue(servers, split.server);
    if (!split || !server) return [];
    const tools = split.tool === '*' ? server.tools : server.tools.filter((t) => t.name === split.tool);
    return tools.map((tool) => ({ name: mcpToolName(server.name, tool.name), server, tool }));
  });
