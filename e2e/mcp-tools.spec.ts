// MCP servers as a tool source (API.md "Tool sources and policies"), end to end: a real MCP server
// (the official SDK's, packages/testkit) as its own process, the gateway, the agent and the tools
// service as processes on NATS and FerretDB, the model the fake OpenAI server. An agent uses the
// server's tools (one server's tool needs approval), the MCP server dies mid-call (a clear error,
// the turn goes on), the tools service is SIGKILLed mid-call (the call is not sent again:
// outcome_unknown), and bad PUTs are 400 naming the field with nothing stored.
import type { FakeOpenAI, ProcessHandle, SseFrame } from '@keel/testkit';
import {
  eventually,
  fakeReply,
  freePort,
  lastUserMessageIncludes,
  openSse,
  startFakeOpenAI,
  startProcess,
  uniqueName,
} from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Answer } from './support/http.js';
import { answerOf, gatewayRequest } from './support/http.js';
import { platformEnv, startAgent, startGateway, startTools } from './support/platform.js';

interface McpCall {
  tool: string;
  args: Record<string, unknown>;
  meta: Record<string, unknown>;
  cancelled: boolean;
  session?: string;
}

describe('MCP servers as a tool source', () => {
  // A redelivered call is taken over after 2 s instead of 10 s.
  const env = platformEnv('mcp_tools', { KEEL_TOOLS_ACK_WAIT_MS: '2000' });
  const operatorKey = `op_${uniqueName('mcp_tools')}`;
  const keys = { admin: '', editor: '', viewer: '' };
  const processes: ProcessHandle[] = [];
  let mcp: ProcessHandle;
  let tools: ProcessHandle;
  let fake: FakeOpenAI;
  let base = '';
  let mcpPort = 0;
  const mcpUrl = () => `http://127.0.0.1:${mcpPort}/mcp`;

  const call = async (method: string, path: string, key: string, body?: unknown): Promise<Answer> =>
    answerOf(await gatewayRequest(base, method, path, key, body));

  const startMcp = async (): Promise<ProcessHandle> => {
    const handle = await startProcess({
      name: 'mcp-server',
      entry: 'packages/testkit/src/mcp/mcp-test-server-main.ts',
      env: { MCP_PORT: String(mcpPort) },
      readyLine: /"msg":"ready"/,
    });
    processes.push(handle);
    return handle;
  };
  const mcpCalls = async (): Promise<{ calls: McpCall[]; headers: Array<Record<string, unknown>> }> =>
    (await (await fetch(`http://127.0.0.1:${mcpPort}/calls`)).json()) as {
      calls: McpCall[];
      headers: Array<Record<string, unknown>>;
    };

  /** Sends `content` (202) and reads the conversation's durable frames until its turn ends. */
  const turn = async (conversationId: string, content: string, approve = false): Promise<SseFrame[]> => {
    const sent = await call('POST', `/v1/conversations/${conversationId}/messages`, keys.editor, { content });
    expect(sent.status, sent.text).toBe(202);
    const feed = await openSse(`${base}/v1/conversations/${conversationId}/events`, {
      headers: { authorization: `Bearer ${keys.viewer}`, accept: 'text/event-stream' },
    });
    try {
      if (approve) {
        const frames = await feed.until((f) => f.event === 'approval.required', 60_000);
        const { approvalId } = frames.at(-1)!.data as { approvalId: string };
        const decided = await call(
          'POST',
          `/v1/conversations/${conversationId}/approvals/${approvalId}`,
          keys.editor,
          { decision: 'approve' },
        );
        expect(decided.status, decided.text).toBe(200);
      }
      return await feed.until((f) => f.event === 'turn.completed' || f.event === 'turn.failed', 90_000);
    } finally {
      feed.close();
    }
  };
  const toolCallIdsOf = (frames: SseFrame[]): string[] =>
    frames.filter((f) => f.event === 'tool.call').map((f) => (f.data as { toolCallId: string }).toolCallId);
  const results = (frames: SseFrame[]) =>
    frames
      .filter((f) => f.event === 'tool.result')
      .map(
        (f) =>
          f.data as {
            name: string;
            ok: boolean;
            result?: unknown;
            error?: { code: string; message: string };
          },
      );
  const newConversation = async (): Promise<string> => {
    const created = await call('POST', '/v1/conversations', keys.editor, { agentId: 'site-editor' });
    expect(created.status, created.text).toBe(201);
    return (created.body as { id: string }).id;
  };

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    mcpPort = await freePort();
    mcp = await startMcp();
    const [agentPort, port, grpcPort] = [await freePort(), await freePort(), await freePort()];
    base = `http://127.0.0.1:${port}`;
    tools = await startTools(env);
    processes.push(
      tools,
      ...(await Promise.all([
        startAgent(env, agentPort, fake.url),
        startGateway(env, { port, grpcPort, agentPort }, operatorKey),
      ])),
    );
    const tenant = await call('POST', '/v1/tenants', operatorKey, { name: 'MCP' });
    expect(tenant.status, tenant.text).toBe(201);
    const tenantId = (tenant.body as { id: string }).id;
    for (const role of ['admin', 'editor', 'viewer'] as const) {
      const issued = await call('POST', `/v1/tenants/${tenantId}/keys`, operatorKey, { role });
      keys[role] = (issued.body as { key: string }).key;
    }
  }, 180_000);

  afterAll(async () => {
    await Promise.all(processes.filter((p) => !p.exit).map((p) => p.kill('SIGTERM')));
    await fake?.close();
  });

  it('PUT connects and lists the tools; headers are sealed and never returned; allow-list; GET lists', async () => {
    const cms = await call('PUT', '/v1/mcp-servers/cms', keys.admin, {
      url: mcpUrl(),
      headers: { authorization: 'Bearer mcp-s3cret' },
    });
    expect(cms.status, cms.text).toBe(200);
    expect(cms.body).toMatchObject({ name: 'cms', url: mcpUrl(), headers: ['authorization'] });
    expect((cms.body as { tools: Array<{ name: string }> }).tools.map((t) => t.name)).toEqual([
      'echo',
      'delete_page',
      'slow',
      'fail',
    ]);
    // The same server again, only delete_page, and every call of it needs approval.
    const danger = await call('PUT', '/v1/mcp-servers/danger', keys.admin, {
      url: mcpUrl(),
      tools: ['delete_page'],
      approval: 'always',
    });
    expect(danger.status, danger.text).toBe(200);
    expect((danger.body as { tools: Array<{ name: string }> }).tools.map((t) => t.name)).toEqual([
      'delete_page',
    ]);
    const listed = await call('GET', '/v1/mcp-servers', keys.admin);
    expect(listed.status).toBe(200);
    expect((listed.body as { data: Array<{ name: string }> }).data.map((s) => s.name)).toEqual([
      'cms',
      'danger',
    ]);
    expect(listed.text).not.toContain('mcp-s3cret');
    expect((await mcpCalls()).headers.some((h) => h.authorization === 'Bearer mcp-s3cret')).toBe(true);
    expect((await call('GET', '/v1/mcp-servers', keys.editor)).status).toBe(403);

    const agent = await call('PUT', '/v1/agents/site-editor', keys.admin, {
      model: 'openai:gpt-4o-mini',
      instructions: 'Edit the site.',
      tools: ['cms__*', 'danger__delete_page'],
    });
    expect(agent.status, agent.text).toBe(200);
  });

  it('bad input: 400 naming the field, nothing stored', async () => {
    const cases: Array<[string, unknown, string]> = [
      ['cms', { url: 'http://127.0.0.1:1/mcp' }, 'url'],
      ['cms', { url: `${mcpUrl().replace('/mcp', '/not-mcp')}` }, 'url'],
      ['bad_name', { url: mcpUrl() }, 'name'],
      ['cms', { url: mcpUrl(), tools: ['no_such_tool'] }, 'tools'],
      ['cms', { url: mcpUrl(), approval: 'maybe' }, 'approval'],
      ['cms', { url: mcpUrl(), headers: { 'bad header': 'x' } }, 'headers.bad header'],
      ['cms', { url: mcpUrl(), extra: 1 }, 'extra'],
      ['cms', { url: 42 }, 'url'],
    ];
    for (const [name, body, field] of cases) {
      const put = await call('PUT', `/v1/mcp-servers/${name}`, keys.admin, body);
      expect(put.status, `${JSON.stringify(body)}: ${put.text}`).toBe(400);
      expect(put.contentType).toContain('application/problem+json');
      expect(put.text, JSON.stringify(body)).toContain(field);
    }
    const unknownAgentTool = await call('PUT', '/v1/agents/other', keys.admin, {
      model: 'openai:gpt-4o-mini',
      tools: ['cms__nope'],
    });
    expect(unknownAgentTool.status).toBe(400);
    const listed = await call('GET', '/v1/mcp-servers', keys.admin);
    const servers = (listed.body as { data: Array<{ name: string; tools: unknown[] }> }).data;
    expect(servers.map((s) => [s.name, s.tools.length])).toEqual([
      ['cms', 4],
      ['danger', 1],
    ]);
    expect((await call('DELETE', '/v1/mcp-servers/nope', keys.admin)).status).toBe(404);
  });

  it('an agent uses the MCP tools: one runs at once, one after its approval; results reach the model', async () => {
    fake.on(
      lastUserMessageIncludes('[m1]'),
      fakeReply.toolCall('cms__echo', { text: 'hello mcp' }),
      fakeReply.toolCall('danger__delete_page', { id: 'page-7' }),
      fakeReply.text('Echoed and deleted page-7.'),
    );
    const id = await newConversation();
    const frames = await turn(id, '[m1] echo then delete page-7', true);
    expect(frames.at(-1)?.event).toBe('turn.completed');
    expect(results(frames)).toEqual([
      expect.objectContaining({
        name: 'cms__echo',
        ok: true,
        result: { text: 'hello mcp', structuredContent: { echoed: 'hello mcp' } },
      }),
      expect.objectContaining({ name: 'danger__delete_page', ok: true }),
    ]);
    expect(frames.filter((f) => f.event === 'approval.required')).toHaveLength(1);
    // The `never` tool's call was decided by nobody: the one approval.decided is the person's.
    const decided = frames.filter((f) => f.event === 'approval.decided').map((f) => f.data);
    expect(decided).toEqual([expect.objectContaining({ decision: 'approve', by: expect.any(String) })]);
    expect(decided[0]).not.toMatchObject({ by: 'policy' });
    const { calls } = await mcpCalls();
    const toolCallIds = toolCallIdsOf(frames);
    expect(
      calls.filter((c) => toolCallIds.includes(String(c.meta['keel/toolCallId']))).map((c) => c.tool),
    ).toEqual(['echo', 'delete_page']);
    const messages = (await call('GET', `/v1/conversations/${id}`, keys.viewer)).body as {
      messages: Array<{ content: string }>;
    };
    expect(messages.messages.at(-1)?.content).toBe('Echoed and deleted page-7.');
  });

  it('the tools service keeps one MCP session per tenant and server: the calls of a turn share it', async () => {
    fake.on(
      lastUserMessageIncludes('[m5]'),
      fakeReply.toolCall('cms__echo', { text: 'one' }),
      fakeReply.toolCall('cms__echo', { text: 'two' }),
      fakeReply.text('Echoed twice.'),
    );
    const id = await newConversation();
    const frames = await turn(id, '[m5] echo twice');
    expect(frames.at(-1)?.event).toBe('turn.completed');
    expect(results(frames).map((r) => r.ok)).toEqual([true, true]);
    const toolCallIds = toolCallIdsOf(frames);
    const sessions = (await mcpCalls()).calls
      .filter((c) => toolCallIds.includes(String(c.meta['keel/toolCallId'])))
      .map((c) => c.session);
    expect(sessions).toHaveLength(2);
    expect(sessions[0]).toEqual(expect.any(String));
    expect(sessions[1]).toBe(sessions[0]);
  });

  it('the MCP server killed mid-call: the model gets a clear error and the turn goes on', async () => {
    fake.on(
      lastUserMessageIncludes('[m2]'),
      fakeReply.toolCall('cms__slow', { ms: 60_000 }),
      fakeReply.text('The CMS is down; try later.'),
    );
    const id = await newConversation();
    const sent = turn(id, '[m2] do the slow thing');
    await eventually(async () => expect((await mcpCalls()).calls.some((c) => c.tool === 'slow')).toBe(true), {
      timeoutMs: 60_000,
    });
    await mcp.kill('SIGKILL');
    const frames = await sent;
    expect(frames.at(-1)?.event).toBe('turn.completed');
    const [result] = results(frames);
    expect(result).toMatchObject({ name: 'cms__slow', ok: false, error: { code: 'mcp_unreachable' } });
    expect(result!.error!.message).toContain('MCP server');
    mcp = await startMcp();
  });

  it('the tools service SIGKILLed mid-call: the call is not sent again; the model reads outcome_unknown', async () => {
    fake.on(
      lastUserMessageIncludes('[m3]'),
      fakeReply.toolCall('cms__slow', { ms: 5_000 }),
      fakeReply.text('Not sure it happened.'),
    );
    const id = await newConversation();
    const sent = turn(id, '[m3] do the slow thing once');
    const slowCall = await eventually(
      async () => {
        const found = (await mcpCalls()).calls.find((c) => c.tool === 'slow');
        expect(found).toBeDefined();
        return found!;
      },
      { timeoutMs: 60_000 },
    );
    await tools.kill('SIGKILL');
    tools = await startTools(env);
    processes.push(tools);
    const frames = await sent;
    expect(frames.at(-1)?.event).toBe('turn.completed');
    expect(results(frames)).toEqual([
      expect.objectContaining({
        name: 'cms__slow',
        ok: false,
        error: expect.objectContaining({ code: 'outcome_unknown' }),
      }),
    ]);
    // Wait past the slow call's own end: still exactly one call with that tool call id.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const same = (await mcpCalls()).calls.filter(
      (c) => c.meta['keel/toolCallId'] === slowCall.meta['keel/toolCallId'],
    );
    expect(same).toHaveLength(1);
    const messages = (await call('GET', `/v1/conversations/${id}`, keys.viewer)).body as {
      messages: Array<{ content: string }>;
    };
    expect(messages.messages.at(-1)?.content).toBe('Not sure it happened.');
  });

  it('an argument-dependent approval: asked for one call and not for another of the same tool', async () => {
    const policy = {
      when: { type: 'object', properties: { id: { const: 'home' } }, required: ['id'] },
      message: 'Delete page {{args.id}}?',
    };
    const bad = await call('PUT', '/v1/mcp-servers/pages', keys.admin, {
      url: mcpUrl(),
      approval: { ...policy, message: 'Delete {{user.id}}?' },
    });
    expect(bad.status, bad.text).toBe(400);
    expect(bad.text).toContain('approval.message');
    const pages = await call('PUT', '/v1/mcp-servers/pages', keys.admin, {
      url: mcpUrl(),
      tools: ['delete_page'],
      approval: policy,
      affects: ['pages'],
    });
    expect(pages.status, pages.text).toBe(200);
    expect(pages.body).toMatchObject({ approval: policy, affects: ['pages'] });
    const agent = await call('PUT', '/v1/agents/pager', keys.admin, {
      model: 'openai:gpt-4o-mini',
      tools: ['pages__delete_page'],
    });
    expect(agent.status, agent.text).toBe(200);
    fake.on(
      lastUserMessageIncludes('[m4]'),
      fakeReply.toolCall('pages__delete_page', { id: 'draft-1' }),
      fakeReply.toolCall('pages__delete_page', { id: 'home' }),
      fakeReply.text('Deleted draft-1 and home.'),
    );
    const created = await call('POST', '/v1/conversations', keys.editor, { agentId: 'pager' });
    const id = (created.body as { id: string }).id;
    const frames = await turn(id, '[m4] delete draft-1 and home', true);
    expect(frames.at(-1)).toMatchObject({ event: 'turn.completed', data: { affected: ['pages'] } });
    const asked = frames
      .filter((f) => f.event === 'approval.required')
      .map((f) => f.data as { args: unknown; message?: string });
    expect(asked).toEqual([expect.objectContaining({ args: { id: 'home' }, message: 'Delete page home?' })]);
    // The `when` let draft-1 through: recorded as decided by the policy, for that call only.
    const calls = frames
      .filter((f) => f.event === 'tool.call')
      .map((f) => f.data as { toolCallId: string; args: { id: string } });
    const draftCall = calls.find((c) => c.args.id === 'draft-1')!.toolCallId;
    const decided = frames.filter((f) => f.event === 'approval.decided').map((f) => f.data);
    expect(decided).toHaveLength(2);
    expect(decided.filter((d) => (d as { by: string }).by === 'policy')).toEqual([
      { approvalId: expect.any(String), toolCallId: draftCall, decision: 'approve', by: 'policy' },
    ]);
    expect(results(frames).map((r) => [r.name, r.ok])).toEqual([
      ['pages__delete_page', true],
      ['pages__delete_page', true],
    ]);
  });

  it('refresh lists again; delete removes the server and its tools from agents', async () => {
    const refreshed = await call('POST', '/v1/mcp-servers/danger/refresh', keys.admin);
    expect(refreshed.status, refreshed.text).toBe(200);
    expect((refreshed.body as { tools: Array<{ name: string }> }).tools.map((t) => t.name)).toEqual([
      'delete_page',
    ]);
    expect((await call('DELETE', '/v1/mcp-servers/danger', keys.admin)).status).toBe(204);
    const listed = await call('GET', '/v1/mcp-servers', keys.admin);
    expect((listed.body as { data: Array<{ name: string }> }).data.map((s) => s.name)).toEqual([
      'cms',
      'pages',
    ]);
    expect((await call('POST', '/v1/mcp-servers/danger/refresh', keys.admin)).status).toBe(404);
  });
});
