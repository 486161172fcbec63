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
      {
        tool: 'echo',
        args: { text: 'hi' },
        meta: { 'keel/toolCallId': 'tc-1' },
        cancelled: false,
        session: expect.any(String),
      },
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

/** The distinct MCP sessions a server saw requests in (its `mcp-session-id` headers). */
const sessionsSeen = (of: McpTestServer): string[] => [
  ...new Set(of.headers.map((h) => h['mcp-session-id']).filter((id): id is string => typeof id === 'string')),
];

describe('MCP sessions kept between calls', () => {
  const callOn = (
    mcp: McpExecutor,
    extra: { tenantId?: string; headers?: Record<string, string>; tool?: string; args?: unknown } = {},
  ) =>
    mcp.call({
      tenantId: extra.tenantId ?? 't1',
      url: server.url,
      ...(extra.headers ? { headers: extra.headers } : {}),
      tool: extra.tool ?? 'echo',
      args: extra.args ?? { text: 'hi' },
      toolCallId: 'tc-kept',
      timeoutMs: 5_000,
    });

  it('calls of one tenant to one server with the same headers share one session', async () => {
    const mcp = executor();
    try {
      for (const text of ['a', 'b', 'c']) {
        expect(await callOn(mcp, { args: { text } })).toMatchObject({ ok: true, result: { text } });
      }
      expect(sessionsSeen(server)).toHaveLength(1);
      expect(server.calls.map((c) => c.args)).toEqual([{ text: 'a' }, { text: 'b' }, { text: 'c' }]);
      expect(mcp.keptSessions).toBe(1);
    } finally {
      await mcp.close();
    }
  });

  it('another tenant, or other headers, get sessions of their own', async () => {
    const mcp = executor();
    try {
      await callOn(mcp, { tenantId: 't1', headers: { authorization: 'Bearer one' } });
      await callOn(mcp, { tenantId: 't2', headers: { authorization: 'Bearer one' } });
      await callOn(mcp, { tenantId: 't1', headers: { authorization: 'Bearer two' } });
      await callOn(mcp, { tenantId: 't1', headers: { authorization: 'Bearer one' } });
      expect(sessionsSeen(server)).toHaveLength(3);
      const byAuthorization = (token: string) =>
        new Set(server.headers.filter((h) => h.authorization === token).map((h) => h['mcp-session-id']));
      // No request of one session carried the other session's credentials.
      for (const id of byAuthorization('Bearer two')) {
        if (id !== undefined) expect(byAuthorization('Bearer one').has(id)).toBe(false);
      }
    } finally {
      await mcp.close();
    }
  });

  it('a server that forgot the session (expired it) runs the next call once, on a new session', async () => {
    const mcp = executor();
    try {
      await callOn(mcp, { args: { text: 'before' } });
      const [first] = sessionsSeen(server);
      server.forgetSessions();
      expect(await callOn(mcp, { args: { text: 'after' } })).toMatchObject({
        ok: true,
        result: { text: 'after' },
      });
      expect(server.calls.map((c) => c.args)).toEqual([{ text: 'before' }, { text: 'after' }]);
      expect(sessionsSeen(server).filter((id) => id !== first)).toHaveLength(1);
    } finally {
      await mcp.close();
    }
  });

  it('a cancelled or timed-out call leaves the session kept; an idle session is closed (DELETE)', async () => {
    const mcp = new McpExecutor({ egress: LOOPBACK, sessions: { idleMs: 300 } });
    const timedOut = await mcp.call({
      tenantId: 't1',
      url: server.url,
      tool: 'slow',
      args: { ms: 5_000 },
      toolCallId: 'tc-slow',
      timeoutMs: 200,
    });
    expect(timedOut).toMatchObject({ ok: false, error: { code: 'mcp_timeout' } });
    const controller = new AbortController();
    const cancelled = mcp.call({
      tenantId: 't1',
      url: server.url,
      tool: 'slow',
      args: { ms: 5_000 },
      toolCallId: 'tc-cancelled',
      timeoutMs: 5_000,
      signal: controller.signal,
    });
    await eventually(() => expect(server.calls).toHaveLength(2));
    controller.abort('turn-cancelled');
    await expect(cancelled).rejects.toBeInstanceOf(ToolCallCancelledError);
    await eventually(() => expect(server.calls[1]?.cancelled).toBe(true));
    expect(await callOn(mcp)).toMatchObject({ ok: true });
    expect(sessionsSeen(server)).toHaveLength(1);
    await eventually(() => expect(mcp.keptSessions).toBe(0));
    await eventually(() => expect(server.sessionsOpen()).toBe(0));
  });

  it('a session past its age is not handed out again, and beyond capacity the idle one is closed', async () => {
    const aged = new McpExecutor({ egress: LOOPBACK, sessions: { maxAgeMs: 0 } });
    await callOn(aged);
    await callOn(aged);
    expect(sessionsSeen(server)).toHaveLength(2);
    await eventually(() => expect(server.sessionsOpen()).toBe(1));
    await aged.close();
    await eventually(() => expect(server.sessionsOpen()).toBe(0));

    const small = new McpExecutor({ egress: LOOPBACK, sessions: { capacity: 1 } });
    await callOn(small, { tenantId: 't1' });
    await callOn(small, { tenantId: 't2' });
    expect(small.keptSessions).toBe(1);
    await eventually(() => expect(server.sessionsOpen()).toBe(1));
    await small.close();
  });

  it('a session whose server died is dropped: the next call reports the server unreachable, then a new one is used', async () => {
    const mcp = executor();
    try {
      await callOn(mcp);
      const port = Number(new URL(server.url).port);
      await server.close();
      expect(await callOn(mcp)).toMatchObject({ ok: false, error: { code: 'mcp_unreachable' } });
      server = await startMcpTestServer({ port });
      expect(await callOn(mcp, { args: { text: 'back' } })).toMatchObject({ ok: true });
      expect(mcp.keptSessions).toBe(1);
    } finally {
      await mcp.close();
    }
  });
});
