import { EgressPolicy } from '@keel/runtime';
import { startMcpTestServer } from '@keel/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startTestWebhook } from './testing/webhook-server.js';
import type { TestWebhook } from './testing/webhook-server.js';
import { McpExecutor } from './mcp-executor.js';
import { WebhookExecutor } from './webhook-executor.js';

const SECRET = 'whsec_caller_test';
let hook: TestWebhook;

beforeEach(async () => {
  hook = await startTestWebhook(SECRET);
});
afterEach(async () => {
  await hook.close();
});

const executor = () => new WebhookExecutor({ egress: EgressPolicy.fromAllowList('127.0.0.0/8,::1/128') });
const call = (caller?: { user?: { id: string; role?: string }; metadata?: Record<string, string> }) => ({
  url: hook.url,
  tenantId: 'acme',
  conversationId: 'conv-1',
  toolCallId: `call-${Math.random()}`,
  args: { id: 'home' },
  ...(caller ? { caller } : {}),
  timeoutMs: 2000,
  secret: SECRET,
});

describe('webhook executor: the end user in the body (API.md "The end user")', () => {
  it("signs a body carrying user { id, role } and the conversation's metadata", async () => {
    hook.reply(() => ({ status: 200, body: '{}' }));
    await executor().call(call({ user: { id: 'ana', role: 'owner' }, metadata: { siteName: 'Acme' } }));
    await executor().call(call({ user: { id: 'bob' } }));
    await executor().call(call());
    const bodies = hook.requests.map((r) => JSON.parse(r.body) as Record<string, unknown>);
    expect(hook.requests.every((r) => r.signatureValid)).toBe(true);
    expect(bodies[0]).toMatchObject({ user: { id: 'ana', role: 'owner' }, metadata: { siteName: 'Acme' } });
    expect(bodies[1]).toMatchObject({ user: { id: 'bob', role: null }, metadata: {} });
    // A call recorded before end users were (no caller): the body as before.
    expect(Object.keys(bodies[2]!).sort()).toEqual(['args', 'conversationId', 'tenantId', 'toolCallId']);
  });
});

describe('MCP executor: the end user in the call (API.md "The end user")', () => {
  it("sends the end user and the conversation's metadata in _meta, next to the tool call id", async () => {
    const server = await startMcpTestServer();
    try {
      const mcp = new McpExecutor({ egress: EgressPolicy.fromAllowList('127.0.0.0/8') });
      const caller = { user: { id: 'ana', role: 'owner' }, metadata: { siteName: 'Acme' } };
      const result = await mcp.call({
        url: server.url,
        tool: 'echo',
        args: { text: 'hi' },
        toolCallId: 'tc-9',
        caller,
        timeoutMs: 5_000,
      });
      expect(result.ok).toBe(true);
      expect(server.calls[0]?.meta).toEqual({
        'keel/toolCallId': 'tc-9',
        'keel/user': { id: 'ana', role: 'owner' },
        'keel/metadata': { siteName: 'Acme' },
      });
    } finally {
      await server.close();
    }
  });
});
