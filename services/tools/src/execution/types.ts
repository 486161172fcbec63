/** A JSON Schema document as a tenant registers it (an object; its content is checked by ajv). */
import type { ApprovalPolicy, JsonSchema } from '@keel/tooling';

export type { JsonSchema };

/** What the tools service needs to know about one tool to execute a call of it. */
export interface ToolDefinition {
  /** `^[a-zA-Z][a-zA-Z0-9_-]{0,63}$`; built-in names are reserved. */
  name: string;
  /**
   * `webhook`: POSTed to `url` (API.md); `builtin`: run in process from `BUILTIN_TOOLS`; `mcp`:
   * `tools/call` of `mcp.tool` on the MCP server at `url`.
   */
  kind: 'webhook' | 'builtin' | 'mcp';
  /** The JSON Schema the model's arguments must satisfy (`type: 'object'`). */
  inputSchema: JsonSchema;
  /** Where a webhook tool is called; required for `kind: 'webhook'`. */
  url?: string;
  /** Per-attempt deadline of a webhook call, in milliseconds. */
  timeoutMs: number;
  /** `always` (or a `when` the arguments match): the call runs only after a user approved it. */
  approval: ApprovalPolicy;
  /** An MCP tool's name on its server, and whether a call left unknown by a crash is sent again. */
  mcp?: { tool: string; retryUnknown: boolean };
}

/**
 * Machine words of tool errors the model sees. `webhook_status_<n>` carries the HTTP status;
 * built-ins add their own words (e.g. `unknown_timezone`, `division_by_zero`).
 */
export type ToolErrorCode =
  | 'invalid_arguments'
  | 'approval_required'
  | 'tool_misconfigured'
  | 'builtin_failed'
  | 'webhook_timeout'
  | 'webhook_unreachable'
  | 'webhook_invalid_json'
  | 'webhook_response_too_large'
  | `webhook_status_${number}`
  | (string & {});

/** A tool error as the model reads it: a stable word and a sentence saying what went wrong. */
export interface ToolError {
  code: ToolErrorCode;
  message: string;
}

/** The final result of one tool call: what the ledger keeps and the model eventually sees. */
export type ToolOutcome =
  | { ok: true; result: unknown; attempts: number; durationMs: number }
  | { ok: false; error: ToolError; attempts: number; durationMs: number };

/** Identifies one tool call across redeliveries; ids are only unique within a tenant. */
export interface ToolCallKey {
  tenantId: string;
  toolCallId: string;
}

/**
 * Who a call is made for (API.md "The end user"): the turn's end user (`X-Keel-User`,
 * `X-Keel-User-Role`) and the conversation's metadata, sent with webhook and MCP calls.
 */
export interface CallCaller {
  user?: { id: string; role?: string };
  metadata?: Record<string, string>;
}
