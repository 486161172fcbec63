// Runs that survive the agent's death, through the public API with the services as processes on
// NATS and FerretDB: a pipeline whose agent is SIGKILLed in the middle of its second task (the run
// completes, no task runs twice, no model request is made twice), a timeout that fires in the
// process started after a SIGKILL, and a task that waits for an approval given through the
// conversation route.
import type { FakeChatRequest } from '@keel/testkit';
import { eventually, fakeReply, messageText, systemPromptIncludes } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { startGatewayPlatform } from './support/gateway-platform.js';
import { answerOf } from './support/http.js';

interface RunBody {
  id: string;
  status: string;
  output: string | null;
  error?: { code: string };
  tasks: Array<{ agentId: string; status: string; conversationId: string }>;
}

const AGENTS = ['alpha', 'beta', 'gamma'] as const;

describe('runs survive a SIGKILL of the agent', () => {
  let platform: GatewayPlatform;
  let keys: Record<'admin' | 'editor' | 'viewer', string>;

  const call = async (method: string, path: string, key: string, body?: unknown) =>
    answerOf(await platform.request(method, path, key, body));
  const requestsOf = (agentId: string): FakeChatRequest[] =>
    platform.fake.requests
      .map((r) => r.body)
      .filter((b): b is FakeChatRequest => b !== undefined && systemPromptIncludes(`agent:${agentId};`)(b));
  const run = async (id: string) => (await call('GET', `/v1/runs/${id}`, keys.viewer)).body as RunBody;
  const startRun = async (teamId: string, input: string) => {
    const started = await call('POST', '/v1/runs', keys.editor, { teamId, input });
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    return (started.body as RunBody).id;
  };
  const ended = (id: string) =>
    eventually(
      async () => {
        const body = await run(id);
        expect(['completed', 'failed', 'cancelled']).toContain(body.status);
        return body;
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );

  beforeAll(async () => {
    platform = await startGatewayPlatform('runs_crash', { agentEnv: { KEEL_AGENT_ACK_WAIT_MS: '3000' } });
    ({ keys } = await platform.tenantWithKeys('runs-crash', ['admin', 'editor', 'viewer']));
    const secret = await call('POST', '/v1/webhook-secret', keys.admin);
    platform.webhook.setSecret((secret.body as { secret: string }).secret);
    for (const [name, approval] of [
      ['lookup', 'never'],
      ['refund', 'always'],
    ] as const) {
      const tool = await call('PUT', `/v1/tools/${name}`, keys.admin, {
        description: name,
        inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
        kind: 'webhook',
        url: platform.webhook.url,
        approval,
        timeoutMs: 20_000,
      });
      expect(tool.status).toBe(200);
    }
    expect(
      (
        await call('PUT', '/v1/providers/openai', keys.admin, {
          baseUrl: platform.fake.url,
          apiKey: 'sk-e2e',
        })
      ).status,
    ).toBe(200);
    for (const agentId of AGENTS) {
      const agent = await call('PUT', `/v1/agents/${agentId}`, keys.admin, {
        model: 'openai:gpt-4o-mini',
        instructions: `agent:${agentId};`,
        tools: agentId === 'beta' ? ['lookup', 'refund'] : [],
        maxSteps: 4,
      });
      expect(agent.status).toBe(200);
    }
    const members = AGENTS.map((agentId, i) => ({ agentId, role: agentId, position: i + 1 }));
    expect((await call('PUT', '/v1/teams/line', keys.admin, { topology: 'pipeline', members })).status).toBe(
      200,
    );
  }, 180_000);

  afterAll(async () => {
    await platform?.stop();
  });

  it('a pipeline whose agent is SIGKILLed during its second task completes; no task or model request twice', async () => {
    platform.fake.reset();
    platform.fake.on(systemPromptIncludes('agent:alpha;'), 'alpha done');
    platform.fake.on(
      systemPromptIncludes('agent:beta;'),
      fakeReply.toolCall('lookup', { id: 'K-1' }),
      'beta done',
    );
    platform.fake.on(systemPromptIncludes('agent:gamma;'), 'gamma done');
    platform.webhook.hold(3_000);
    const id = await startRun('line', 'Crash test.');
    // Beta's turn is in its tool call (the tools service holds it) when the agent dies.
    await eventually(() => expect(platform.webhook.hits.some((h) => h.body.args.id === 'K-1')).toBe(true), {
      timeoutMs: 30_000,
    });
    await platform.restartAgent('SIGKILL');
    platform.webhook.hold(0);
    const done = await ended(id);
    expect(done.status).toBe('completed');
    expect(done.output).toBe('gamma done');
    expect(done.tasks.map((t) => t.agentId)).toEqual(['alpha', 'beta', 'gamma']);
    // One model request per step: alpha 1, beta 2 (its tool call, then its answer), gamma 1.
    expect(requestsOf('alpha')).toHaveLength(1);
    expect(requestsOf('beta')).toHaveLength(2);
    expect(requestsOf('gamma')).toHaveLength(1);
    // One turn per task: each task's conversation holds its one user message.
    for (const task of done.tasks) {
      const view = (await call('GET', `/v1/conversations/${task.conversationId}`, keys.viewer)).body as {
        messages: Array<{ role: string }>;
      };
      expect(view.messages.filter((m) => m.role === 'user')).toHaveLength(1);
    }
    const keysHit = platform.webhook.hits.filter((h) => h.body.args.id === 'K-1').map((h) => h.key);
    expect(platform.webhook.effects.get(keysHit[0]!)).toBe(1);
    expect(messageText(requestsOf('gamma')[0]!.messages.at(-1))).toContain('[beta, round 1]\nbeta done');
  });

  it('a timeout fires in the agent started after a SIGKILL', async () => {
    platform.fake.reset();
    platform.fake.on(
      systemPromptIncludes('agent:alpha;'),
      fakeReply.hang(),
      fakeReply.hang(),
      fakeReply.hang(),
    );
    const slow = AGENTS.map((agentId, i) => ({ agentId, role: agentId, position: i + 1 }));
    const team = { topology: 'pipeline', members: slow, timeoutMs: 6_000 };
    expect((await call('PUT', '/v1/teams/slow', keys.admin, team)).status).toBe(200);
    const id = await startRun('slow', 'Never answered.');
    await eventually(() => expect(requestsOf('alpha')).toHaveLength(1), { timeoutMs: 20_000 });
    await platform.restartAgent('SIGKILL');
    const done = await ended(id);
    expect(done.status).toBe('failed');
    expect(done.error?.code).toBe('timeout');
    expect(requestsOf('beta')).toHaveLength(0);
  });

  it("a run exceeding maxSteps (all members' model calls) fails while a task's turn runs, and cancels it", async () => {
    platform.fake.reset();
    platform.fake.on(systemPromptIncludes('agent:alpha;'), 'alpha done');
    platform.fake.on(
      systemPromptIncludes('agent:beta;'),
      fakeReply.toolCall('lookup', { id: 'M-1' }),
      fakeReply.toolCall('lookup', { id: 'M-2' }),
      fakeReply.toolCall('lookup', { id: 'M-3' }),
      'beta never gets here',
    );
    const members = AGENTS.map((agentId, i) => ({ agentId, role: agentId, position: i + 1 }));
    expect(
      (await call('PUT', '/v1/teams/capped', keys.admin, { topology: 'pipeline', members, maxSteps: 2 }))
        .status,
    ).toBe(200);
    const done = await ended(await startRun('capped', 'Spend.'));
    expect(done.status).toBe('failed');
    expect(done.error?.code).toBe('max_steps');
    expect(done.tasks.map((t) => `${t.agentId}:${t.status}`)).toEqual(['alpha:completed', 'beta:cancelled']);
    expect(requestsOf('gamma')).toHaveLength(0);
    await eventually(async () => {
      const view = await call('GET', `/v1/conversations/${done.tasks[1]!.conversationId}`, keys.viewer);
      expect((view.body as { status: string }).status).toBe('idle');
    });
    // Beta's turn was stopped after its second call (the one that exceeded the run's 2 in all).
    expect(requestsOf('beta').length).toBeLessThanOrEqual(3);
  });

  it('a task that needs an approval waits for it; approved through the conversation route, the run completes', async () => {
    platform.fake.reset();
    platform.fake.on(systemPromptIncludes('agent:alpha;'), 'alpha asks for a refund');
    platform.fake.on(
      systemPromptIncludes('agent:beta;'),
      fakeReply.toolCall('refund', { id: 'R-1' }),
      'refunded R-1',
    );
    platform.fake.on(systemPromptIncludes('agent:gamma;'), 'gamma confirms');
    const id = await startRun('line', 'Refund R-1.');
    const waiting = await eventually(
      async () => {
        const body = await run(id);
        const beta = body.tasks[1];
        expect(beta?.status).toBe('running');
        const view = (await call('GET', `/v1/conversations/${beta!.conversationId}`, keys.viewer)).body as {
          pendingApprovals: Array<{ approvalId: string }>;
        };
        expect(view.pendingApprovals).toHaveLength(1);
        return { conversationId: beta!.conversationId, approvalId: view.pendingApprovals[0]!.approvalId };
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    const decided = await call(
      'POST',
      `/v1/conversations/${waiting.conversationId}/approvals/${waiting.approvalId}`,
      keys.editor,
      { decision: 'approve' },
    );
    expect(decided.status).toBe(200);
    const done = await ended(id);
    expect(done.status).toBe('completed');
    expect(done.output).toBe('gamma confirms');
  });
});
