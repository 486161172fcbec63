import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/*
 * A real MCP server (the official SDK's low-level Server over Streamable HTTP, stateful sessions)
 * with a few tools tests drive: what it was called with, which calls were cancelled, and a tool
 * that hangs until told to answer. Runs in the test process or as its own (mcp-test-server-main).
 */

/** One call the server received. */
export interface McpTestCall {
  tool: string;
  args: Record<string, unknown>;
  /** The `_meta` the client sent with the call (Keel puts its tool call id there). */
  meta: Record<string, unknown>;
  /** Set when the client cancelled the call (notifications/cancelled reached the handler). */
  cancelled: boolean;
  /** The MCP session the call came in (its `mcp-session-id`). */
  session?: string;
}

/** The tools the test server offers, with their JSON schemas. */
export const MCP_TEST_TOOLS = [
  {
    name: 'echo',
    description: 'Echoes the text back, as text and as structured content.',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  },
  {
    name: 'delete_page',
    description: 'Deletes a page by id.',
    inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
  },
  {
    name: 'slow',
    description: 'Answers after `ms` milliseconds (or when cancelled).',
    inputSchema: { type: 'object', properties: { ms: { type: 'integer' } }, required: ['ms'] },
  },
  {
    name: 'fail',
    description: 'Always answers with isError.',
    inputSchema: { type: 'object', properties: {} },
  },
] as const;

/** A running test server. */
export interface McpTestServer {
  /** The Streamable HTTP endpoint, `http://127.0.0.1:<port>/mcp`. */
  url: string;
  calls: McpTestCall[];
  /** Request headers of every HTTP request (lower-case names), for header checks. */
  headers: Array<Record<string, string | string[] | undefined>>;
  /** Sessions initialized and not yet closed (a client's DELETE closes one). */
  sessionsOpen(): number;
  /** Forgets every session without closing a connection, as a server that expired them: their ids are unknown from now on. */
  forgetSessions(): void;
  close(): Promise<void>;
}

const text = (value: string): CallToolResult => ({ content: [{ type: 'text', text: value }] });

const sleep = (ms: number, signal: AbortSignal): Promise<boolean> =>
  new Promise((resolve) => {
    const timer = setTimeout(() => resolve(true), ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve(false);
    });
  });

const runTool = async (call: McpTestCall, signal: AbortSignal): Promise<CallToolResult> => {
  switch (call.tool) {
    case 'echo': {
      const value = String(call.args.text);
      return { ...text(value), structuredContent: { echoed: value } };
    }
    case 'delete_page':
      return {
        ...text(`deleted page ${String(call.args.id)}`),
        structuredContent: { deleted: call.args.id },
      };
    case 'slow': {
      const finished = await sleep(Number(call.args.ms), signal);
      if (!finished) call.cancelled = true;
      return text(finished ? `slept ${Number(call.args.ms)} ms` : 'cancelled');
    }
    case 'fail':
      return { ...text('the test tool failed on purpose'), isError: true };
    default:
      return { ...text(`unknown tool ${call.tool}`), isError: true };
  }
};

/** An MCP server instance for one session, its tools recording into `calls`. */
const sessionServer = (calls: McpTestCall[]): Server => {
  const server = new Server({ name: 'keel-test-mcp', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: MCP_TEST_TOOLS.map((t) => ({ ...t })) }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const call: McpTestCall = {
      tool: request.params.name,
      args: request.params.arguments ?? {},
      meta: { ...request.params._meta },
      cancelled: false,
      ...(extra.sessionId === undefined ? {} : { session: extra.sessionId }),
    };
    calls.push(call);
    return runTool(call, extra.signal);
  });
  return server;
};

const readBody = async (req: IncomingMessage): Promise<unknown> => {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8');
  return raw === '' ? undefined : (JSON.parse(raw) as unknown);
};

/** Starts the server on `port` (default: any free one) of 127.0.0.1. */
export const startMcpTestServer = async (options: { port?: number } = {}): Promise<McpTestServer> => {
  const calls: McpTestCall[] = [];
  const headers: McpTestServer['headers'] = [];
  const sessions = new Map<string, StreamableHTTPServerTransport>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (req.method === 'GET' && req.url === '/calls') {
      // What another process (an e2e test) reads of a server running on its own.
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ calls, headers }));
      return;
    }
    headers.push({ ...req.headers });
    if (!req.url?.startsWith('/mcp')) {
      res.writeHead(404).end('not an MCP endpoint');
      return;
    }
    const body = req.method === 'POST' ? await readBody(req) : undefined;
    const sessionId = req.headers['mcp-session-id'];
    let transport = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
    if (!transport) {
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void sessions.set(id, created),
      });
      created.onclose = () => {
        if (created.sessionId) sessions.delete(created.sessionId);
      };
      await sessionServer(calls).connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res, body);
  };

  const http: HttpServer = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(error instanceof Error ? error.message : 'failed');
    });
  });
  await new Promise<void>((resolve) => http.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    calls,
    headers,
    sessionsOpen: () => sessions.size,
    forgetSessions: () => sessions.clear(),
    close: async () => {
      await Promise.all([...sessions.values()].map((t) => t.close().catch(() => undefined)));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
};
