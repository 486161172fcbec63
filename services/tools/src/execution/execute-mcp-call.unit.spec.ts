import { EgressPolicy } from '@keel/runtime/egress';
import type { McpTestServer } from '@keel/testkit';
import { startMcpTestServer } from '@keel/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { executeToolCall } from './execute-tool-call.js';
import type { ToolCallRequest } from './execute-tool-call.js';
import { InMemoryToolCallLedger } from './ledger.js';
import { McpExecutor } from './mcp-executor.js';
import type { ToolDefinition } from './types.js';

let server: McpTestServer;
let ledger: InMemoryToolCallLedger;
const mcp = new McpExecutor({ egress: EgressPolicy.fromAllowList('127.0.0.0/8') });
const webhooks = { call: () => Promise.reject(new Error('no webhook here')) };

beforeEach(async () => {
  server = await startMcpTestServer();
  ledger = new InMemoryToolCallLedger();
});
afterEach(async () => {
  await server.close();
});

const tool = (retryUnknown = false): ToolDefinition => ({
  name: 'cms__echo',
  kind: 'mcp',
  url: server.url,
  timeoutMs: 5_000,
  approval: 'never',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  mcp: { tool: 'echo', retryUnknown },
});
const request = (retryUnknown = false, args: unknown = { text: 'hi' }): ToolCallRequest => ({
  tenantId: 't1',
  conversationId: 'c1',
  toolCallId: 'tc-mcp-1',
  name: 'cms__echo',
  args,
  tool: tool(retryUnknown),
  approvalGranted: false,
  mcpHeaders: { authorization: 'Bearer sealed-then-opened' },
});

describe('executeToolCall with an MCP tool', () => {
  it('runs once; a redelivery is answered from the ledger without a second call', async () => {
    const first = await executeToolCall(request(), { ledger, webhooks, mcp });
    expect(first).toMatchObject({
      ok: true,
      result: { text: 'hi', structuredContent: { echoed: 'hi' } },
      execution: 'executed',
    });
    const again = await executeToolCall(request(), { ledger, webhooks, mcp });
    expect(again.execution).toBe('replayed');
    expect(server.calls).toHaveLength(1);
    expect(server.headers.some((h) => h.authorization === 'Bearer sealed-then-opened')).toBe(true);
  });

  it('claims an MCP call only once the caller says it is still wanted (a claim never sent would read as unknown)', async () => {
    const notWanted = new Error('turn cancelled');
    await expect(
      executeToolCall(request(), { ledger, webhooks, mcp }, { wanted: Promise.reject(notWanted) }),
    ).rejects.toBe(notWanted);
    expect(await ledger.get({ tenantId: 't1', toolCallId: 'tc-mcp-1' })).toBeUndefined();
    expect(server.calls).toHaveLength(0);
    expect((await executeToolCall(request(), { ledger, webhooks, mcp })).execution).toBe('executed');
  });

  it('a call an earlier attempt left in flight is outcome_unknown, not sent again', async () => {
    await ledger.begin(
      { tenantId: 't1', toolCallId: 'tc-mcp-1' },
      { conversationId: 'c1', name: 'cms__echo' },
    );
    const result = await executeToolCall(request(), { ledger, webhooks, mcp });
    expect(result).toMatchObject({ ok: false, error: { code: 'outcome_unknown' } });
    expect(server.calls).toHaveLength(0);
    // Recorded: the next redelivery reads the same answer.
    expect((await ledger.get({ tenantId: 't1', toolCallId: 'tc-mcp-1' }))?.outcome).toMatchObject({
      error: { code: 'outcome_unknown' },
    });
  });

  it('with retryUnknown the interrupted call is sent again', async () => {
    await ledger.begin(
      { tenantId: 't1', toolCallId: 'tc-mcp-1' },
      { conversationId: 'c1', name: 'cms__echo' },
    );
    const result = await executeToolCall(request(true), { ledger, webhooks, mcp });
    expect(result).toMatchObject({ ok: true, execution: 'resumed' });
    expect(server.calls).toHaveLength(1);
  });

  it('arguments failing the listed schema are a tool error; nothing is sent', async () => {
    const result = await executeToolCall(request(false, { text: 5 }), { ledger, webhooks, mcp });
    expect(result).toMatchObject({ ok: false, error: { code: 'invalid_arguments' } });
    expect(server.calls).toHaveLength(0);
  });
});
