// Sub-agents through the public API, the services as processes on NATS and FerretDB and the fake
// provider scripted per agent (a marker in each agent's instructions): a three-level chain
// answering through its children, each child's conversation readable and linked to its parent; a
// cycle refused at PUT with its path; a depth-6 chain refused at run time as a tool error; a
// child's approval in the parent's stream, decided through the child's route; cancel cascading
// (API.md "Tool sources and policies", Sub-agents).
import type { ProcessHandle, SseFrame } from '@keel/testkit';
import { eventually, fakeReply, freePort, openSse, systemPromptIncludes } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { startGatewayPlatform } from './support/gateway-platform.js';
import { answerOf } from './support/http.js';
import { startAudit } from './support/platform.js';

interface ConversationBody {
  id: string;
  agentId: string;
  status: string;
  parentConversationId?: string;
  messages: Array<{ role: string; content: string; toolCalls?: Array<{ name: string }> }>;
}

describe('sub-agents, end to end', () => {
  let platform: GatewayPlatform;
  let keys: Record<'admin' | 'editor' | 'viewer', string>;
  let audit: ProcessHandle;

  const call = async (
    method: string,
    path: string,
    key: string,
    body?: unknown,
    headers?: Record<string, string>,
  ) => answerOf(await platform.request(method, path, key, body, headers));
  const putAgent = async (agentId: string, body: Record<string, unknown> = {}) =>
    call('PUT', `/v1/agents/${agentId}`, keys.admin, {
      model: 'openai:gpt-4o-mini',
      instructions: `agent:${agentId};`,
      maxSteps: 3,
      ...body,
    });
  const conversation = async (id: string) =>
    (await call('GET', `/v1/conversations/${id}`, keys.viewer)).body as ConversationBody;
  const newConversation = async (agentId: string): Promise<string> => {
    const created = await call('POST', '/v1/conversations', keys.editor, { agentId });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return (created.body as { id: string }).id;
  };
  /** Sends `content` with the turn streamed; the stream, open until the caller closes it. */
  const stream = async (conversationId: string, content: string, headers: Record<string, string> = {}) =>
    openSse(`${platform.base}/v1/conversations/${conversationId}/messages`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${keys.editor}`,
        accept: 'text/event-stream',
        'content-type': 'application/json',
        ...headers,
      },
      body: JSON.stringify({ content }),
    });
  const ends = (f: SseFrame) => ['turn.completed', 'turn.failed', 'turn.cancelled'].includes(f.event ?? '');
  /** The durable frames of a conversation's log up to its first turn's end. */
  const feed = async (conversationId: string): Promise<SseFrame[]> => {
    const events = await openSse(`${platform.base}/v1/conversations/${conversationId}/events`, {
      headers: { authorization: `Bearer ${keys.viewer}`, accept: 'text/event-stream' },
    });
    const frames = await events.until(ends, 30_000);
    events.close();
    return frames.filter((f) => f.event !== 'message.delta' && f.event !== 'context');
  };
  const childOf = (frames: SseFrame[]): string | undefined =>
    frames
      .map((f) =>
        f.event === 'tool.call'
          ? (f.data as { childConversationId?: string }).childConversationId
          : undefined,
      )
      .find((id) => id !== undefined);
  const modelCallsOf = (agentId: string): number =>
    platform.fake.requests.filter(
      (r) => r.body !== undefined && systemPromptIncludes(`agent:${agentId};`)(r.body),
    ).length;

  beforeAll(async () => {
    // The audit service too: usage by user and by agent is read from its rollups.
    const auditPort = await freePort();
    platform = await startGatewayPlatform('sub-agents', {
      gatewayEnv: { AUDIT_GRPC_URL: `127.0.0.1:${auditPort}` },
      // A step the SIGKILLed agent had taken goes to the restarted one after 3 s, not 30.
      agentEnv: { KEEL_AGENT_ACK_WAIT_MS: '3000' },
    });
    audit = await startAudit(platform.env, auditPort);
    ({ keys } = await platform.tenantWithKeys('sub-agents', ['admin', 'editor', 'viewer']));
    await platform.configureSupportAgent(keys.admin);
  }, 180_000);

  afterAll(async () => {
    await audit?.kill('SIGTERM');
    await platform?.stop();
  });

  it("a three-level chain answers through its children; each child's conversation is readable and linked", async () => {
    platform.fake.reset();
    // The leaf's instructions name the end user: the chain runs for the root turn's user and role.
    const leafAgent = await putAgent('leaf', {
      instructions: 'agent:leaf; for {{user.id}} as {{user.role}}',
    });
    expect(leafAgent.status, JSON.stringify(leafAgent.body)).toBe(200);
    expect((await putAgent('middle', { agents: ['leaf'] })).status).toBe(200);
    const top = await putAgent('top', { agents: ['middle'] });
    expect(top.status, JSON.stringify(top.body)).toBe(200);
    expect(top.body).toMatchObject({ agents: ['middle'] });
    platform.fake.on(
      systemPromptIncludes('agent:top;'),
      fakeReply.toolCall('agent__middle', { task: 'Find out about owls.' }),
      'Top: owls hunt at night.',
    );
    platform.fake.on(
      systemPromptIncludes('agent:middle;'),
      fakeReply.toolCall('agent__leaf', { task: 'When do owls hunt?' }),
      'Middle: at night.',
    );
    platform.fake.on(systemPromptIncludes('agent:leaf;'), 'Leaf: owls hunt at night.');
    const root = await newConversation('top');
    const turn = await stream(root, 'Tell me about owls.', {
      'x-keel-user': 'ada',
      'x-keel-user-role': 'owner',
    });
    const frames = await turn.until(ends, 30_000);
    turn.close();
    expect(frames.at(-1)!.event).toBe('turn.completed');
    const toolCall = frames.find((f) => f.event === 'tool.call')!.data as Record<string, unknown>;
    expect(toolCall).toMatchObject({ name: 'agent__middle', args: { task: 'Find out about owls.' } });
    const middleId = toolCall.childConversationId as string;
    expect(frames.find((f) => f.event === 'tool.result')!.data).toMatchObject({
      toolCallId: toolCall.toolCallId,
      ok: true,
      result: 'Middle: at night.',
    });
    const middle = await conversation(middleId);
    expect(middle).toMatchObject({ agentId: 'middle', parentConversationId: root, status: 'idle' });
    expect(middle.messages[0]).toMatchObject({ role: 'user', content: 'Find out about owls.' });
    const leafId = childOf(await feed(middleId))!;
    const leaf = await conversation(leafId);
    expect(leaf).toMatchObject({ agentId: 'leaf', parentConversationId: middleId });
    expect(leaf.messages.map((m) => m.content)).toEqual(['When do owls hunt?', 'Leaf: owls hunt at night.']);
    expect((await conversation(root)).parentConversationId).toBeUndefined();
    const leafRequests = platform.fake.requests.filter((r) => r.rawBody.includes('agent:leaf;'));
    expect(leafRequests).toHaveLength(1);
    expect(leafRequests[0]!.rawBody).toContain('agent:leaf; for ada as owner');
    // The children's usage counts for the parent's end user and, per agent, for each child.
    const today = new Date().toISOString().slice(0, 10);
    await eventually(async () => {
      const byAgent = await call('GET', `/v1/usage?from=${today}&to=${today}&groupBy=agent`, keys.viewer);
      expect(byAgent.status, JSON.stringify(byAgent.body)).toBe(200);
      const rows = (byAgent.body as { rows: Array<{ key: string; turns: number }> }).rows;
      expect(
        rows
          .filter((r) => ['top', 'middle', 'leaf'].includes(r.key))
          .map((r) => `${r.key}:${r.turns}`)
          .sort(),
      ).toEqual(['leaf:1', 'middle:1', 'top:1']);
      const byUser = await call('GET', `/v1/usage?from=${today}&to=${today}&groupBy=user`, keys.viewer);
      const ada = (byUser.body as { rows: Array<{ key: string; turns: number }> }).rows.find(
        (r) => r.key === 'ada',
      );
      expect(ada?.turns).toBe(3);
    });
  });

  it('refuses at PUT a cycle naming its path, and keeps the agent as it was', async () => {
    expect((await putAgent('ping')).status).toBe(200);
    expect((await putAgent('pong', { agents: ['ping'] })).status).toBe(200);
    const cycle = await putAgent('ping', { agents: ['pong'] });
    expect(cycle.status).toBe(400);
    expect((cycle.body as { detail: string }).detail).toContain('ping → pong → ping');
    const self = await putAgent('ping', { agents: ['ping'] });
    expect((self.body as { detail: string }).detail).toContain('ping → ping');
    expect((await putAgent('ping', { agents: ['ghost'] })).status).toBe(400);
    expect((await putAgent('ping', { maxDepth: 9 })).status).toBe(400);
    const kept = await call('GET', '/v1/agents/ping', keys.viewer);
    expect((kept.body as { agents?: string[] }).agents ?? []).toEqual([]);
  });

  it('refuses a depth-6 chain at run time: a tool error for the fifth, not a failed parent', async () => {
    platform.fake.reset();
    for (let level = 6; level >= 1; level--) {
      const below = level < 6 ? { agents: [`d${level + 1}`] } : {};
      expect((await putAgent(`d${level}`, below)).status).toBe(200);
      platform.fake.on(
        systemPromptIncludes(`agent:d${level};`),
        fakeReply.toolCall(`agent__d${level + 1}`, { task: `level ${level + 1}` }),
        `d${level} done`,
      );
    }
    const root = await newConversation('d1');
    const turn = await stream(root, 'Go deep.');
    const frames = await turn.until(ends, 60_000);
    turn.close();
    expect(frames.at(-1)!.event).toBe('turn.completed');
    let id = root;
    for (let level = 2; level <= 5; level++) id = childOf(await feed(id))!;
    expect((await conversation(id)).agentId).toBe('d5');
    const fifth = await feed(id);
    expect(childOf(fifth)).toBeUndefined();
    const refused = fifth.find((f) => f.event === 'tool.result')!.data as {
      ok: boolean;
      error: { code: string };
    };
    expect(refused).toMatchObject({ ok: false, error: { code: 'max_depth' } });
    expect(fifth.at(-1)!.event).toBe('turn.completed');
    expect(modelCallsOf('d6')).toBe(0);
  });

  it("shows a child's approval in the parent's stream, decided through the child's route", async () => {
    platform.fake.reset();
    expect((await putAgent('clerk', { tools: ['refund'] })).status).toBe(200);
    expect((await putAgent('desk', { agents: ['clerk'] })).status).toBe(200);
    platform.fake.on(
      systemPromptIncludes('agent:desk;'),
      fakeReply.toolCall('agent__clerk', { task: 'Refund order 7.' }),
      'Desk: refunded.',
    );
    platform.fake.on(
      systemPromptIncludes('agent:clerk;'),
      fakeReply.toolCall('refund', { id: '7', amount: 5 }),
      'Clerk: order 7 refunded.',
    );
    const root = await newConversation('desk');
    const turn = await stream(root, 'Please refund order 7.');
    const asked = await turn.until((f) => f.event === 'approval.required', 30_000);
    const approval = asked.at(-1)!.data as { conversationId: string; approvalId: string; name: string };
    expect(approval).toMatchObject({ name: 'refund', args: { id: '7', amount: 5 } });
    expect(approval.conversationId).not.toBe(root);
    expect((await conversation(approval.conversationId)).parentConversationId).toBe(root);
    const decided = await call(
      'POST',
      `/v1/conversations/${approval.conversationId}/approvals/${approval.approvalId}`,
      keys.editor,
      { decision: 'approve' },
    );
    expect(decided.status).toBe(200);
    const frames = await turn.until(ends, 30_000);
    turn.close();
    expect(frames.at(-1)!.event).toBe('turn.completed');
    expect(
      frames.filter((f) => f.event === 'tool.result').map((f) => (f.data as { result?: unknown }).result),
    ).toEqual(['Clerk: order 7 refunded.']);
  });

  it('survives a SIGKILL of the agent mid-chain: one child, one turn of it, its answer reaches the parent', async () => {
    platform.fake.reset();
    expect((await putAgent('worker')).status).toBe(200);
    expect((await putAgent('chief', { agents: ['worker'] })).status).toBe(200);
    platform.fake.on(
      systemPromptIncludes('agent:chief;'),
      fakeReply.toolCall('agent__worker', { task: 'Work.' }),
      'Chief: done.',
    );
    const answer = 'Worker: worked hard.';
    platform.fake.on(
      systemPromptIncludes('agent:worker;'),
      fakeReply.text(answer, { chunkSize: 2, chunkDelayMs: 300 }),
      answer,
    );
    const root = await newConversation('chief');
    const turn = await stream(root, 'Get it done.');
    const called = await turn.until((f) => f.event === 'tool.call', 30_000);
    const childId = (called.at(-1)!.data as { childConversationId: string }).childConversationId;
    await eventually(() => expect(modelCallsOf('worker')).toBe(1));
    turn.close();
    await platform.restartAgent('SIGKILL');
    const frames = await feed(root);
    expect(frames.at(-1)!.event).toBe('turn.completed');
    expect(frames.filter((f) => f.event === 'tool.call')).toHaveLength(1);
    expect(frames.find((f) => f.event === 'tool.result')!.data).toMatchObject({ ok: true, result: answer });
    const child = await conversation(childId);
    expect(child.messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['Work.']);
    expect(child.messages.filter((m) => m.role === 'assistant').map((m) => m.content)).toEqual([answer]);
  }, 90_000);

  it("cancels the children with the parent's turn", async () => {
    platform.fake.reset();
    expect((await putAgent('sleeper')).status).toBe(200);
    expect((await putAgent('boss', { agents: ['sleeper'] })).status).toBe(200);
    platform.fake.on(
      systemPromptIncludes('agent:boss;'),
      fakeReply.toolCall('agent__sleeper', { task: 'Sleep.' }),
    );
    platform.fake.on(systemPromptIncludes('agent:sleeper;'), fakeReply.hang());
    const root = await newConversation('boss');
    const turn = await stream(root, 'Wait for it.');
    const started = await turn.until((f) => f.event === 'tool.call', 30_000);
    const childId = (started.at(-1)!.data as { childConversationId: string }).childConversationId;
    await eventually(() => expect(modelCallsOf('sleeper')).toBe(1));
    expect((await call('POST', `/v1/conversations/${root}/cancel`, keys.editor)).status).toBe(202);
    const frames = await turn.until(ends, 30_000);
    turn.close();
    expect(frames.at(-1)!.event).toBe('turn.cancelled');
    const child = await feed(childId);
    expect(child.at(-1)!.event).toBe('turn.cancelled');
    expect((await conversation(childId)).status).toBe('idle');
  });
});
