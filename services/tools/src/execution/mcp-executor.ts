import { EgressPolicy, createEgressFetch, egressDeniedIn } from '@keel/runtime';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { McpSessionLease, McpSessionPoolOptions } from './mcp-sessions.js';
import { McpSession, McpSessionPool, sessionGone } from './mcp-sessions.js';
import type { CallCaller, ToolError } from './types.js';
import { ToolCallCancelledError } from './webhook-executor.js';

/*
 * MCP servers as tool sources (API.md "Tool sources and policies"): the official SDK's client over
 * Streamable HTTP, every request through the egress-guarded fetch. Tool calls share a kept
 * session per tenant, server and headers (mcp-sessions.ts: an initialize round trip and a DELETE
 * less per call); a server that forgot the session is asked again on a new one, once, since it
 * ran nothing. Listing opens its own session and closes it. Cancel and timeout reach the server
 * as notifications/cancelled (the SDK sends it when the request's signal aborts or its timeout
 * fires); neither ends the session.
 */

/** One tool as an MCP server lists it. */
export interface McpToolInfo {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** Where an MCP server is and how to talk to it. */
export interface McpEndpoint {
  /** Whose call it is: sessions are kept per tenant, never shared across tenants. */
  tenantId?: string;
  url: string;
  /** Headers sent on every request (opened from their sealed form just for the call). */
  headers?: Record<string, string>;
  timeoutMs: number;
}

/** One tool call on an MCP server. */
export interface McpCallRequest extends McpEndpoint {
  /** The tool's name on the server (without Keel's `<server>__` prefix). */
  tool: string;
  args: unknown;
  /** Sent as `_meta["keel/toolCallId"]`, so the server can tell a repeat from a new call. */
  toolCallId: string;
  /** Sent as `_meta["keel/user"]` (`{ id, role }`) and `_meta["keel/metadata"]` (the conversation's). */
  caller?: CallCaller;
  signal?: AbortSignal;
}

/** The call's `_meta`: its id, and who it is made for when known (API.md "The end user"). */
const callMeta = (request: McpCallRequest): Record<string, unknown> => {
  const { caller } = request;
  return {
    'keel/toolCallId': request.toolCallId,
    ...(caller?.user ? { 'keel/user': { id: caller.user.id, role: caller.user.role ?? null } } : {}),
    ...(caller ? { 'keel/metadata': caller.metadata ?? {} } : {}),
  };
};

/** The answer of one call: what the model sees, as a result or a tool error. */
export type McpCallResult =
  { ok: true; result: unknown; attempts: number } | { ok: false; error: ToolError; attempts: number };

/** Options of the executor. */
export interface McpExecutorOptions {
  /** The ranges a tenant's MCP server may be in though not public (KEEL_EGRESS_ALLOW). */
  egress?: EgressPolicy;
  /** Replaces the egress-guarded fetch (tests only). */
  fetch?: typeof fetch;
  /** How long sessions are kept, and how many (the defaults suit production). */
  sessions?: McpSessionPoolOptions;
}

/** Why connecting or listing failed, in words an admin can act on. */
export class McpConnectError extends Error {}

/** Longest error text taken from a tool's answer. */
const MAX_ERROR_CHARS = 2_000;

/** Text of the content items of a result, joined (images and resources are named, not inlined). */
export const textOf = (content: CallToolResult['content']): string =>
  content
    .map((item) => (item.type === 'text' ? item.text : `[${item.type}]`))
    .join('\n')
    .trim();

/** A tools/call result as Keel's tool outcome: `isError` is a tool error, else text and structured content. */
export const mapCallResult = (answer: CallToolResult): McpCallResult => {
  const text = textOf(answer.content ?? []);
  if (answer.isError === true) {
    const message = text === '' ? 'the MCP tool reported an error' : text.slice(0, MAX_ERROR_CHARS);
    return { ok: false, error: { code: 'mcp_tool_error', message }, attempts: 1 };
  }
  const result: Record<string, unknown> = { text };
  if (answer.structuredContent !== undefined) result.structuredContent = answer.structuredContent;
  return { ok: true, result, attempts: 1 };
};

/** A thrown error of a call as the tool error the model reads. */
export const callErrorOf = (error: unknown, timeoutMs: number): ToolError => {
  const denied = egressDeniedIn(error);
  if (denied) return { code: 'egress_denied', message: denied.message };
  if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
    return { code: 'mcp_timeout', message: `the MCP server did not answer within ${timeoutMs} ms` };
  }
  if (error instanceof McpError && error.code !== ErrorCode.ConnectionClosed) {
    return {
      code: 'mcp_error',
      message: `the MCP server refused the call: ${error.message}`.slice(0, MAX_ERROR_CHARS),
    };
  }
  const reason = error instanceof Error ? error.message : String(error);
  return {
    code: 'mcp_unreachable',
    message: `the MCP server could not be reached or dropped the call: ${reason}`.slice(0, MAX_ERROR_CHARS),
  };
};

/** Calls tools on, and lists tools of, MCP servers over Streamable HTTP. */
export class McpExecutor {
  readonly #fetch: typeof fetch;
  readonly #sessions: McpSessionPool<McpEndpoint>;

  constructor(options: McpExecutorOptions = {}) {
    this.#fetch = options.fetch ?? createEgressFetch({ policy: options.egress ?? new EgressPolicy() });
    this.#sessions = new McpSessionPool<McpEndpoint>(
      (endpoint) => this.#connect(endpoint, AbortSignal.timeout(endpoint.timeoutMs)),
      options.sessions,
    );
  }

  /** Sessions kept or opening now. */
  get keptSessions(): number {
    return this.#sessions.size;
  }

  /** Ends every kept session (the service stopping). */
  close(): Promise<void> {
    return this.#sessions.close();
  }

  /** The server's tools (tools/list, every page); McpConnectError says why when it is unreachable or not MCP. */
  async listTools(endpoint: McpEndpoint): Promise<McpToolInfo[]> {
    const signal = AbortSignal.timeout(endpoint.timeoutMs);
    const session = await this.#connect(endpoint, signal).catch((error: unknown) => {
      throw new McpConnectError(connectReason(error, endpoint.timeoutMs));
    });
    try {
      const tools: McpToolInfo[] = [];
      let cursor: string | undefined;
      do {
        const page = await session.client.listTools(cursor === undefined ? {} : { cursor }, {
          signal,
          timeout: endpoint.timeoutMs,
        });
        for (const tool of page.tools) {
          tools.push({
            name: tool.name,
            description: tool.description ?? '',
            inputSchema: tool.inputSchema as Record<string, unknown>,
          });
        }
        cursor = page.nextCursor;
      } while (cursor !== undefined && tools.length < 1_000);
      return tools;
    } catch (error) {
      throw new McpConnectError(connectReason(error, endpoint.timeoutMs));
    } finally {
      await session.close();
    }
  }

  /**
   * Runs one tool call. Resolves with the result or a tool error (unreachable, timeout, the
   * server's isError); rejects with ToolCallCancelledError when `signal` aborts (the server was
   * sent notifications/cancelled).
   */
  async call(request: McpCallRequest): Promise<McpCallResult> {
    const { signal, timeoutMs } = request;
    if (signal?.aborted) throw new ToolCallCancelledError(signal.reason);
    try {
      const lease = await this.#sessions.acquire(request);
      const answer = await this.#callOn(lease, request).catch(async (error: unknown) => {
        if (lease.fresh || !sessionGone(error) || signal?.aborted) throw error;
        return this.#callOn(await this.#sessions.acquire(request), request);
      });
      return mapCallResult(answer as CallToolResult);
    } catch (error) {
      if (signal?.aborted) throw new ToolCallCancelledError(signal.reason);
      return { ok: false, error: callErrorOf(error, timeoutMs), attempts: 1 };
    }
  }

  /** tools/call on a lent session, given back unless the call failed for another reason than the server's answer. */
  async #callOn(lease: McpSessionLease, request: McpCallRequest): Promise<unknown> {
    const { signal, timeoutMs } = request;
    try {
      const answer = await lease.session.whileOpen(
        lease.session.client.callTool(
          {
            name: request.tool,
            arguments: (request.args ?? {}) as Record<string, unknown>,
            _meta: callMeta(request),
          },
          undefined,
          { timeout: timeoutMs, ...(signal ? { signal } : {}) },
        ),
      );
      lease.release();
      return answer;
    } catch (error) {
      // The server's own answer, a timeout or a cancel (notifications/cancelled sent) leaves the
      // session as good as it was; anything else may have broken it.
      const sessionIntact =
        signal?.aborted === true || (error instanceof McpError && error.code !== ErrorCode.ConnectionClosed);
      if (sessionIntact) lease.release();
      else lease.discard();
      throw error;
    }
  }

  async #connect(endpoint: McpEndpoint, signal: AbortSignal | undefined): Promise<McpSession> {
    const transport = new StreamableHTTPClientTransport(new URL(endpoint.url), {
      fetch: this.#fetch,
      requestInit: { headers: endpoint.headers ?? {}, redirect: 'manual' },
      // A dropped stream is not resumed: the call's outcome is reported, not waited for.
      reconnectionOptions: {
        maxRetries: 0,
        initialReconnectionDelay: 100,
        maxReconnectionDelay: 100,
        reconnectionDelayGrowFactor: 1,
      },
    });
    const client = new Client({ name: 'keel-tools', version: '1.0.0' });
    const session = new McpSession(client, transport);
    try {
      await client.connect(transport, { timeout: endpoint.timeoutMs, ...(signal ? { signal } : {}) });
    } catch (error) {
      await session.close();
      throw error;
    }
    return session;
  }
}

const connectReason = (error: unknown, timeoutMs: number): string => {
  const denied = egressDeniedIn(error);
  if (denied) return denied.message;
  if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
    return `the MCP server did not answer within ${timeoutMs} ms`;
  }
  const reason = error instanceof Error ? error.message : String(error);
  return `not reachable as an MCP server (Streamable HTTP): ${reason}`.slice(0, MAX_ERROR_CHARS);
};
