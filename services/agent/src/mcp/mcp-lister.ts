import { ValidationError } from '@keel/core';
import type { McpToolDefinition } from '@keel/events';
import type { EgressPolicy } from '@keel/runtime';
import { createEgressFetch, egressDeniedIn } from '@keel/runtime';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/** Most tools read of one server (pages of tools/list). */
const MAX_LISTED = 1_000;

/** Lists an MCP server's tools at PUT and refresh (the tools service makes the calls). */
export interface McpLister {
  list(endpoint: {
    url: string;
    headers?: Record<string, string>;
    timeoutMs: number;
  }): Promise<McpToolDefinition[]>;
}

/**
 * The official SDK's client over Streamable HTTP, every request through the egress-guarded fetch.
 * A server that cannot be reached, refuses, or does not speak MCP is a ValidationError on `url`
 * with the reason (API.md: 400 with the reason).
 */
export const createMcpLister = (egress: EgressPolicy): McpLister => {
  const guarded = createEgressFetch({ policy: egress });
  return {
    async list({ url, headers, timeoutMs }) {
      const transport = new StreamableHTTPClientTransport(new URL(url), {
        fetch: guarded,
        requestInit: { headers: headers ?? {}, redirect: 'manual' },
      });
      const client = new Client({ name: 'keel-agent', version: '1.0.0' });
      const signal = AbortSignal.timeout(timeoutMs);
      try {
        await client.connect(transport, { timeout: timeoutMs, signal });
        const tools: McpToolDefinition[] = [];
        let cursor: string | undefined;
        do {
          const page = await client.listTools(cursor === undefined ? {} : { cursor }, {
            timeout: timeoutMs,
            signal,
          });
          for (const t of page.tools) {
            tools.push({
              name: t.name,
              description: t.description ?? '',
              inputSchema: t.inputSchema as Record<string, unknown>,
            });
          }
          cursor = page.nextCursor;
        } while (cursor !== undefined && tools.length < MAX_LISTED);
        return tools;
      } catch (error) {
        throw new ValidationError(`url: ${reasonOf(error)}`, { field: 'url' });
      } finally {
        await transport.terminateSession().catch(() => undefined);
        await client.close().catch(() => undefined);
      }
    },
  };
};

const reasonOf = (error: unknown): string => {
  const denied = egressDeniedIn(error);
  if (denied) return denied.message;
  const reason = error instanceof Error ? error.message : String(error);
  return `not reachable as an MCP server (Streamable HTTP): ${reason}`.slice(0, 500);
};
