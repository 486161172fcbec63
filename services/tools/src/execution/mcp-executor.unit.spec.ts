import { EgressPolicy, parseAllowList } from '@keel/runtime/egress';
import type { McpTestServer } from '@keel/testkit';
import { eventually, startMcpTestServer } from '@keel/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { McpConnectError, McpExecutor } from './mcp-executor.js';
import { ToolCallCancelledError } from './webhook-executor.js';

// A real MCP server (the SDK's, over Streamable HTTP on loopback), so loopback is opened here.
const LOOPBACK = new EgressPolicy(parseAllowList('127.0.0.0/8'));

let server: McpTestServer;
beforeEach(async () => {
  server = await startMcpTestServer();
});
afterEach(async () => {
  await server.close();
});

const executor = (): McpExecutor => new McpExecutor({ egress: LOOPBACK });
const call = (tool: string, args: unknown, extra: { timeoutMs?: number; signal?: AbortSignal } = {}) =>
  executor().call({
    url: server.url,
    tool,
    args,
    toolCallId: 'tc-1',
    timeoutMs: extra.timeoutMs ?? 5_000,
    ...(extra.signal ? { signal: extra.signal } : {}),
  });

describe('MCP executor against a real MCP server', () => {
  it('lists the server tools with their schemas, sending the configured headers', async () => {
    const tools = await executor().listTools({
      url: server.url,
      headers: { authorization: 'Bearer t0k' },
      timeoutMs: 5_000,
    });
    expect(tools.map((t) => t.name)).toEqual(['echo', 'delete_page', 'slow', 'fail']);
    expect(tools[0]).toMatchObject({
      description: expect.stringContaining('Echoes'),
      inputSchema: { type: 'object' },
    });
    expect(server.headers.some((h) => h.authorization === 'Bearer t0k')).toBe(true);
  });

  it('maps a result to text and structured content, the tool call id in _meta', async () => {
    const result = await call('echo', { text: 'hi' });
    expect(result).toEqual({
      ok: true,
      result: { text: 'hi', structuredContent: { echoed: 'hi' } },
      attempts: 1,
    });
    expect(server.calls).toEqual([
      { tool: 'echo', args: { text: 'hi' }, meta: { 'keel/toolCallId': 'tc-1' }, cancelled: false },
    ]);
  });

  it('maps isError to the tool error mcp_tool_error with the text', async () => {
    expect(await call('fail', {})).toEqual({
      ok: false,
      error: { code: 'mcp_tool_error', message: 'the test tool failed on purpose' },
      attempts: 1,
    });
  });

  it('times out with mcp_timeout and tells the server the call is cancelled', async () => {
    const result = await call('slow', { ms: 5_000 }, { timeoutMs: 300 });
    expect(result).toMatchObject({ ok: false, error: { code: 'mcp_timeout' } });
    await eventually(() => expect(server.calls[0]?.cancelled).toBe(true));
  });

  it('cancel: rejects with ToolCallCancelledError and the server handler is aborted', async () => {
    const controller = new AbortController();
    const pending = call('slow', { ms: 5_000 }, { signal: controller.signal });
    await eventually(() => expect(server.calls).toHaveLength(1));
    controller.abort('turn-cancelled');
    await expect(pending).rejects.toBeInstanceOf(ToolCallCancelledError);
    await eventually(() => expect(server.calls[0]?.cancelled).toBe(true));
  });

  it('a server that dies mid-call is a clear mcp_unreachable error, well before the timeout', async () => {
    const started = Date.now();
    const pending = call('slow', { ms: 20_000 }, { timeoutMs: 15_000 });
    await eventually(() => expect(server.calls).toHaveLength(1));
    await server.close();
    const result = await pending;
    expect(result).toMatchObject({ ok: false, error: { code: 'mcp_unreachable' } });
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('refuses a loopback server when the egress policy does not open loopback (nothing sent)', async () => {
    const strict = new McpExecutor({ egress: new EgressPolicy() });
    const result = await strict.call({
      url: server.url,
      tool: 'echo',
      args: { text: 'x' },
      toolCallId: 't',
      timeoutMs: 2_000,
    });
    expect(result).toMatchObject({ ok: false, error: { code: 'egress_denied' } });
    await expect(strict.listTools({ url: server.url, timeoutMs: 2_000 })).rejects.toBeInstanceOf(
      McpConnectError,
    );
    expect(server.headers).toHaveLength(0);
  });

  it('a URL that is not an MCP server fails listing with the reason', async () => {
    await expect(
      executor().listTools({ url: server.url.replace('/mcp', '/nope'), timeoutMs: 2_000 }),
    ).rejects.toThrow(/not reachable as an MCP server/);
  });
});
