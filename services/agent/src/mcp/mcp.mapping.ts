import type { KeyRole, McpServerDefinition } from '@keel/events';
import type { McpServer } from '@keel/proto/keel/mcp/v1/mcp';
import { approvalOfText, approvalText } from '../grpc/agent.mapping.js';
import type { PutMcpServer } from '../tenant-config/mcp-servers.js';

/** Default deadline of one MCP call (as a webhook tool's). */
export const MCP_TIMEOUT_MS = 10_000;
/** Longest a listing at PUT or refresh may take (under the gateway's 10 s call deadline). */
export const MCP_LIST_TIMEOUT_MS = 8_000;

/** The settings of a PutMcpServer's message (proto defaults read as "not given"); the decider judges them. */
export const mcpSettingsOf = (server: McpServer): PutMcpServer['server'] => ({
  name: server.name,
  url: server.url,
  ...(server.allow ? { allow: [...server.allow.names] } : {}),
  approval: approvalOfText(server.approval),
  roles: server.roles as KeyRole[],
  timeoutMs: server.timeoutMs || MCP_TIMEOUT_MS,
  retryUnknown: server.retryUnknown,
  ...(server.affects.length > 0 ? { affects: [...new Set(server.affects)] } : {}),
  ...(server.userRoles.length > 0 ? { userRoles: [...new Set(server.userRoles)] } : {}),
});

/** The message of a stored server: never its headers, only their names. */
export const mcpServerMessage = (server: McpServerDefinition): McpServer => ({
  name: server.name,
  url: server.url,
  tools: server.tools.map((t) => ({
    name: t.name,
    description: t.description,
    inputSchemaJson: JSON.stringify(t.inputSchema),
  })),
  ...(server.allow ? { allow: { names: server.allow } } : {}),
  approval: approvalText(server.approval),
  roles: server.roles,
  timeoutMs: server.timeoutMs,
  retryUnknown: server.retryUnknown,
  headerNames: server.headerNames ?? [],
  affects: [...(server.affects ?? [])],
  userRoles: [...(server.userRoles ?? [])],
});
