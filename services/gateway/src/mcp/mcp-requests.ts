// `PUT /v1/mcp-servers/{name}` (API.md "Tool sources and policies"), checked for shape and types
// here; the agent checks the meaning (name, URL and egress, allow-list against what the server lists).
import type { McpServer } from '@keel/proto/keel/mcp/v1/mcp';
import { approvalOfText, approvalTextOf } from '../config/approval-field.js';
import { TOOL_TIMEOUT_MS, affectsOf, userRolesOf } from '../config/config-requests.js';
import {
  fail,
  objectWith,
  optionalIntegerIn,
  optionalObject,
  optionalString,
  optionalStrings,
  requiredString,
} from '../config/request-fields.js';

/** Most headers one server may be given, and their sizes. */
const MAX_HEADERS = 20;
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/;
/** Headers the transport sets itself: a tenant value would break the protocol. */
const RESERVED_HEADERS = new Set([
  'content-type',
  'accept',
  'mcp-session-id',
  'mcp-protocol-version',
  'host',
  'content-length',
]);

/** What PutMcpServer takes: the settings and the headers (still in clear: the agent seals them). */
export interface McpServerRequest {
  server: Omit<McpServer, 'tools' | 'headerNames'> & { tools: []; headerNames: [] };
  headers: Record<string, string>;
}

const checkHeaders = (value: unknown): Record<string, string> => {
  const object = optionalObject(value, 'headers') ?? {};
  const names = Object.keys(object);
  if (names.length > MAX_HEADERS) fail('headers', `headers must have at most ${MAX_HEADERS} entries`);
  for (const name of names) {
    const field = `headers.${name.slice(0, 100)}`;
    if (!HEADER_NAME.test(name)) fail(field, `${field} is not a valid header name`);
    if (RESERVED_HEADERS.has(name.toLowerCase())) fail(field, `${field} is set by the MCP transport itself`);
    const text = optionalString(object[name], field, 8_192);
    if (text === undefined || /[\r\n\0]/.test(text))
      fail(field, `${field} must be a header value (a string without line breaks)`);
  }
  return object as Record<string, string>;
};

/** Checks `PUT /v1/mcp-servers/{name}`'s body and maps it to PutMcpServer's fields. */
export const parsePutMcpServer = (name: string, body: unknown): McpServerRequest => {
  const object = objectWith(body, [
    'url',
    'headers',
    'tools',
    'approval',
    'roles',
    'timeoutMs',
    'retryUnknown',
    'affects',
    'userRoles',
  ]);
  if (object.retryUnknown !== undefined && typeof object.retryUnknown !== 'boolean') {
    fail('retryUnknown', 'retryUnknown must be a boolean');
  }
  const allow = optionalStrings(object.tools, 'tools', 200, 128);
  const { min, max } = TOOL_TIMEOUT_MS;
  return {
    server: {
      name,
      url: requiredString(object.url, 'url', 2048),
      tools: [],
      ...(allow ? { allow: { names: allow } } : {}),
      approval: approvalTextOf(object.approval),
      roles: optionalStrings(object.roles, 'roles', 3, 16) ?? [],
      timeoutMs: optionalIntegerIn(object.timeoutMs, 'timeoutMs', min, max) ?? TOOL_TIMEOUT_MS.default,
      retryUnknown: object.retryUnknown === true,
      headerNames: [],
      affects: affectsOf(object.affects),
      userRoles: userRolesOf(object.userRoles),
    },
    headers: checkHeaders(object.headers),
  };
};

/** An MCP server as API.md shows it: never its headers' values. */
export interface McpServerView {
  name: string;
  url: string;
  tools: Array<{ name: string; description: string; inputSchema: unknown }>;
  allow?: string[];
  approval: unknown;
  roles: string[];
  timeoutMs: number;
  retryUnknown: boolean;
  headers: string[];
  affects?: string[];
  userRoles?: string[];
}

/** The view of a stored server (`headers`: the names only). */
export const mcpServerView = (server: McpServer): McpServerView => ({
  name: server.name,
  url: server.url,
  tools: server.tools.map((t) => ({
    name: t.name,
    description: t.description,
    inputSchema: JSON.parse(t.inputSchemaJson || '{}') as unknown,
  })),
  ...(server.allow ? { allow: server.allow.names } : {}),
  approval: approvalOfText(server.approval),
  roles: server.roles,
  timeoutMs: server.timeoutMs,
  retryUnknown: server.retryUnknown,
  headers: server.headerNames,
  ...(server.affects.length > 0 ? { affects: server.affects } : {}),
  ...(server.userRoles.length > 0 ? { userRoles: server.userRoles } : {}),
});
