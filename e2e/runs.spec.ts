// Runs of teams through the public API, the services as processes on NATS and FerretDB and the
// fake provider scripted per agent (by a marker in each agent's instructions): the order of the
// tasks and what each member saw (the context newest first, cut), the aggregations, a cancel
// mid-task and a timeout (API.md "Teams and runs").
import type { FakeChatRequest } from '@keel/testkit';
import { eventually, fakeReply, messageText, openSse, systemPromptIncludes } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { startGatewayPlatform } from './support/gateway-platform.js';
import { answerOf } from './support/http.js';

interface RunBody {
  id: string;
  status: string;
  output: string | null;
  error?: { code: string; message: string };
  tasks: Array<{ id: string; agentId: string; round: number; status: string; conversationId: string }>;
  usage: { modelCalls: number; byAgent: Array<{ agentId: string; modelCalls: number }> };
}

const AGENTS = ['alpha', 'beta', 'gamma'] as const;
/** Agents configured: the members, and `lead`, the hierarchical team's manager. */
const CONFIGURED = [...AGENTS, 'lead'] as const;

describe('runs, end to end', () => {
  let platform: GatewayPlatform;
  let keys: Record<'admin' | 'editor' | 'viewer', string>;

  const call = async (method: string, path: string, key: string, body?: unknown) =>
    answerOf(await platform.request(method, path, key, body));
  /** What agent `agentId` was sent as its last user message, per model request, in order. */
  const sentTo = (agentId: string): string[] =>
    platform.fake.requests
      .map((r) => r.body)
      .filter((b): b is FakeChatRequest => b !== undefined && systemPromptIncludes(`agent:${agentId};`)(b))
      .map((b) => messageText(b.messages.findLast((m) => m.role === 'user')));
  const putTeam = async (teamId: string, team: Record<string, unknown>) => {
    const members = AGENTS.map((agentId, i) => ({ agentId, role: agentId.toUpperCase(), position: i + 1 }));
    const stored = await call('PUT', `/v1/teams/${teamId}`, keys.admin, { members, ...team });
    expect(stored.status, JSON.stringify(stored.body)).toBe(200);
  };
  const startRun = async (teamId: string, input: string): Promise<string> => {
    const started = await call('POST', '/v1/runs', keys.editor, { teamId, input });
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    expect((started.body as RunBody).status).toBe('pending');
    return (started.body as RunBody).id;
  };
  const run = async (id: string) => (await call('GET', `/v1/runs/${id}`, keys.viewer)).body as RunBody;
  const ended = (id: string) =>
    eventually(
      async () => {
        const body = await run(id);
        expect(['completed', 'failed', 'cancelled']).toContain(body.status);
        return body;
      },
      { timeoutMs: 30_000 },
    );

  beforeAll(async () => {
    platform = await startGatewayPlatform('runs');
    ({ keys } = await platform.tenantWithKeys('runs', ['admin', 'editor', 'viewer']));
    const provider = await call('PUT', '/v1/providers/openai', keys.admin, {
      baseUrl: platform.fake.url,
      apiKey: 'sk-tenant-e2e',
    });
    expect(provider.status).toBe(200);
    for (const agentId of CONFIGURED) {
      const agent = await call('PUT', `/v1/agents/${agentId}`, keys.admin, {
        model: 'openai:gpt-4o-mini',
        instructions: `agent:${agentId};`,
        maxSteps: 2,
      });
      expect(agent.status).toBe(200);
    }
  }, 180_000);

  afterAll(async () => {
    await platform?.stop();
  });

  it('pipeline: members in position order, each seeing the input and earlier outputs newest first, cut', async () => {
    platform.fake.reset();
    platform.fake.on(systemPromptIncludes('agent:alpha;'), 'alpha says one');
    platform.fake.on(systemPromptIncludes('agent:beta;'), 'beta says two');
    platform.fake.on(systemPromptIncludes('agent:gamma;'), 'gamma says three');
    await putTeam('line', { topology: 'pipeline', aggregation: 'last', contextCharLimit: 40 });
    const id = await startRun('line', 'Write about owls.');
    const done = await ended(id);
    expect(done.status).toBe('completed');
    expect(done.output).toBe('gamma says three');
    expect(done.tasks.map((t) => `${t.agentId}:${t.status}`)).toEqual([
      'alpha:completed',
      'beta:completed',
      'gamma:completed',
    ]);
    expect(sentTo('alpha')).toEqual(['Write about owls.']);
    expect(sentTo('beta')).toEqual([
      'Write about owls.\n\nEarlier outputs, newest first:\n\n[ALPHA, round 1]\nalpha says one',
    ]);
    // 40 characters of context in all: beta's output first; alpha's falls past the cut.
    const context = '[BETA, round 1]\nbeta says two\n\n[ALPHA, round 1]\nalpha says one'.slice(0, 40);
    expect(sentTo('gamma')).toEqual([`Write about owls.\n\nEarlier outputs, newest first:\n\n${context}`]);
    expect(done.usage.modelCalls).toBe(3);
    expect(done.usage.byAgent.map((u) => `${u.agentId}:${u.modelCalls}`)).toEqual([
      'alpha:1',
      'beta:1',
      'gamma:1',
    ]);
    // Each task is a turn of a conversation of its agent, readable as any conversation.
    const conversation = await call('GET', `/v1/conversations/${done.tasks[1]!.conversationId}`, keys.viewer);
    expect((conversation.body as { agentId: string }).agentId).toBe('beta');
  });

  it('debate with merge, round_robin and hierarchical: the documented order of tasks and what each saw', async () => {
    platform.fake.reset();
    for (const agentId of AGENTS) {
      platform.fake.on(
        systemPromptIncludes(`agent:${agentId};`),
        `${agentId} 1`,
        `${agentId} 2`,
        `${agentId} 3`,
      );
    }
    await putTeam('debate', { topology: 'debate', rounds: 2, aggregation: 'merge' });
    const debate = await ended(await startRun('debate', 'D?'));
    expect(debate.tasks.map((t) => `${t.agentId}@${t.round}`)).toEqual([
      'alpha@1',
      'beta@1',
      'gamma@1',
      'alpha@2',
      'beta@2',
      'gamma@2',
    ]);
    // Round 2: each sees the others' round-1 answers, newest first, not its own.
    expect(sentTo('beta')).toEqual([
      'D?',
      'D?\n\nEarlier outputs, newest first:\n\n[GAMMA, round 1]\ngamma 1\n\n[ALPHA, round 1]\nalpha 1',
    ]);
    expect(debate.output).toBe('## ALPHA\n\nalpha 2\n\n## BETA\n\nbeta 2\n\n## GAMMA\n\ngamma 2');
    // Each member debates in one conversation of its agent: its round 2 is a turn after its round 1.
    expect(debate.tasks[4]!.conversationId).toBe(debate.tasks[1]!.conversationId);
    expect(new Set(debate.tasks.map((t) => t.conversationId)).size).toBe(3);
    const betaRound2 = platform.fake.requests
      .map((r) => r.body)
      .filter((b): b is FakeChatRequest => b !== undefined && systemPromptIncludes('agent:beta;')(b))[1]!;
    expect(betaRound2.messages.filter((m) => m.role === 'assistant').map((m) => messageText(m))).toEqual([
      'beta 1',
    ]);

    platform.fake.reset();
    for (const agentId of AGENTS)
      platform.fake.on(systemPromptIncludes(`agent:${agentId};`), `${agentId} a`, `${agentId} b`);
    await putTeam('ring', { topology: 'round_robin', rounds: 2 });
    const ring = await ended(await startRun('ring', 'R?'));
    expect(ring.tasks.map((t) => `${t.agentId}@${t.round}`)).toEqual([
      'alpha@1',
      'beta@1',
      'gamma@1',
      'alpha@2',
      'beta@2',
      'gamma@2',
    ]);
    expect(sentTo('alpha')[1]).toBe(
      'R?\n\nEarlier outputs, newest first:\n\n[GAMMA, round 1]\ngamma a\n\n[BETA, round 1]\nbeta a\n\n[ALPHA, round 1]\nalpha a',
    );
    expect(ring.output).toBe('gamma b');

    // hierarchical: the manager's turn, delegating to its members as sub-agent tools.
    platform.fake.reset();
    platform.fake.on(
      systemPromptIncludes('agent:lead;'),
      fakeReply.toolCalls([
        { name: 'agent__beta', arguments: { task: 'Count the owls in the barn.' } },
        { name: 'agent__gamma', arguments: { task: 'Count the owls in the wood.' } },
      ]),
      'owls: 3',
    );
    for (const agentId of AGENTS)
      platform.fake.on(systemPromptIncludes(`agent:${agentId};`), `${agentId} counted`);
    const members = AGENTS.map((agentId, i) => ({ agentId, role: agentId.toUpperCase(), position: i + 1 }));
    const boss = await call('PUT', '/v1/teams/boss', keys.admin, {
      topology: 'hierarchical',
      manager: 'lead',
      members,
    });
    expect(boss.status).toBe(200);
    const led = await ended(await startRun('boss', 'Count owls.'));
    // One task, the manager's; the members ran as its sub-agents (child conversations).
    expect(led.tasks.map((t) => `${t.agentId}@${t.round}`)).toEqual(['lead@1']);
    expect(sentTo('lead')[0]).toBe(
      'Count owls.\n\nYour team, to whom you delegate with their tools (a task each, as you decide), then answer:\n' +
        '- ALPHA (alpha): the tool agent__alpha\n- BETA (beta): the tool agent__beta\n- GAMMA (gamma): the tool agent__gamma',
    );
    const offered = platform.fake.requests
      .map((r) => r.body)
      .find((b): b is FakeChatRequest => b !== undefined && systemPromptIncludes('agent:lead;')(b));
    expect((offered?.tools ?? []).map((t) => t.function.name).sort()).toEqual([
      'agent__alpha',
      'agent__beta',
      'agent__gamma',
    ]);
    expect(sentTo('beta')).toEqual(['Count the owls in the barn.']);
    expect(sentTo('gamma')).toEqual(['Count the owls in the wood.']);
    expect(sentTo('alpha')).toEqual([]);
    // The manager's second call saw its members' answers as the tools' results.
    const last = platform.fake.requests
      .map((r) => r.body)
      .filter((b): b is FakeChatRequest => b !== undefined && systemPromptIncludes('agent:lead;')(b))
      .at(-1)!;
    expect(
      last.messages
        .filter((m) => m.role === 'tool')
        .map((m) => messageText(m))
        .sort(),
    ).toEqual(['"beta counted"', '"gamma counted"']);
    expect(led.output).toBe('owls: 3');
    // The members' model calls are the run's too (maxSteps counts all of them): lead 2, beta 1, gamma 1.
    expect(led.usage.modelCalls).toBe(4);
  });

  it('parallel with vote: the answer most members gave; a tie goes to the lowest position', async () => {
    platform.fake.reset();
    platform.fake.on(systemPromptIncludes('agent:alpha;'), 'No', ' yes ');
    platform.fake.on(systemPromptIncludes('agent:beta;'), 'YES', 'maybe');
    platform.fake.on(systemPromptIncludes('agent:gamma;'), 'yes', 'Maybe');
    await putTeam('vote', { topology: 'parallel', aggregation: 'vote' });
    const first = await ended(await startRun('vote', 'Owls?'));
    expect(first.output).toBe('YES');
    // alpha " yes ", beta "maybe", gamma "Maybe": maybe wins 2 to 1, given first by beta.
    const second = await ended(await startRun('vote', 'Owls again?'));
    expect(second.output).toBe('maybe');
    expect(sentTo('gamma')).toEqual(['Owls?', 'Owls again?']);
  });

  it('a cancel mid-task ends the run and cancels the running turn', async () => {
    platform.fake.reset();
    platform.fake.on(systemPromptIncludes('agent:alpha;'), fakeReply.hang());
    await putTeam('stuck', { topology: 'pipeline', aggregation: 'last' });
    const id = await startRun('stuck', 'Wait.');
    const running = await eventually(async () => {
      const body = await run(id);
      expect(body.tasks[0]?.status).toBe('running');
      return body;
    });
    await eventually(() => expect(sentTo('alpha')).toHaveLength(1));
    const cancelled = await call('POST', `/v1/runs/${id}/cancel`, keys.editor);
    expect(cancelled.status).toBe(202);
    expect((await run(id)).status).toBe('cancelled');
    const conversationId = running.tasks[0]!.conversationId;
    await eventually(async () => {
      const view = await call('GET', `/v1/conversations/${conversationId}`, keys.viewer);
      expect((view.body as { status: string }).status).toBe('idle');
    });
    expect((await call('POST', `/v1/runs/${id}/cancel`, keys.editor)).status).toBe(409);
    expect(sentTo('beta')).toEqual([]);
  });

  it('a run exceeding timeoutMs fails with that reason', async () => {
    platform.fake.reset();
    platform.fake.on(systemPromptIncludes('agent:alpha;'), fakeReply.hang());
    await putTeam('slow', { topology: 'pipeline', aggregation: 'last', timeoutMs: 1_500 });
    const done = await ended(await startRun('slow', 'Slowly.'));
    expect(done.status).toBe('failed');
    expect(done.error?.code).toBe('timeout');
  });

  it("the run's stream: its events from the log, then live, resumable with Last-Event-ID", async () => {
    platform.fake.reset();
    platform.fake.on(systemPromptIncludes('agent:alpha;'), 'a');
    platform.fake.on(systemPromptIncludes('agent:beta;'), 'b');
    platform.fake.on(systemPromptIncludes('agent:gamma;'), 'c');
    const id = await startRun('line', 'Stream it.');
    const feed = (headers: Record<string, string> = {}) =>
      openSse(`${platform.base}/v1/runs/${id}/events`, {
        headers: { authorization: `Bearer ${keys.viewer}`, accept: 'text/event-stream', ...headers },
      });
    const stream = await feed();
    const frames = (await stream.until((f) => f.event === 'run.completed', 30_000)).filter(
      (f) => f.event !== 'message.delta',
    );
    stream.close();
    expect(frames.map((f) => f.event)).toEqual([
      'run.started',
      'task.started',
      'task.completed',
      'task.started',
      'task.completed',
      'task.started',
      'task.completed',
      'run.completed',
    ]);
    expect(frames.at(-1)!.data).toEqual({ output: 'c' });
    expect(frames.map((f) => Number(f.id))).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    const resumed = await feed({ 'last-event-id': '5' });
    const rest = (await resumed.until((f) => f.event === 'run.completed', 10_000)).filter(
      (f) => f.event !== 'message.delta',
    );
    resumed.close();
    expect(rest.map((f) => f.id)).toEqual(['6', '7', '8']);
    // Started with Accept: text/event-stream, the answer is the run's stream, ending with the run.
    platform.fake.on(systemPromptIncludes('agent:alpha;'), 'a2');
    // Beta's answer streams slowly: its tokens reach the run's stream as message.delta with its taskId.
    platform.fake.on(
      systemPromptIncludes('agent:beta;'),
      fakeReply.text('beta streams its answer', { chunkSize: 4, chunkDelayMs: 150 }),
    );
    platform.fake.on(systemPromptIncludes('agent:gamma;'), 'c2');
    const live = await openSse(`${platform.base}/v1/runs`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${keys.editor}`,
        accept: 'text/event-stream',
        'content-type': 'application/json',
      },
      body: JSON.stringify({ teamId: 'line', input: 'Live.' }),
    });
    await live.ended;
    const durable = live.events().filter((f) => f.event !== 'message.delta');
    expect(durable.map((f) => f.event)).toEqual(frames.map((f) => f.event));
    expect(durable.at(-1)!.data).toEqual({ output: 'c2' });
    const betaTask = (durable[3]!.data as { taskId: string }).taskId;
    const deltas = live.events().filter((f) => f.event === 'message.delta');
    const taskIds = durable
      .filter((f) => f.event === 'task.started')
      .map((f) => (f.data as { taskId: string }).taskId);
    expect(deltas.every((f) => taskIds.includes((f.data as { taskId: string }).taskId))).toBe(true);
    const beta = deltas.filter((f) => (f.data as { taskId: string }).taskId === betaTask);
    expect(beta.length).toBeGreaterThan(1);
    expect('beta streams its answer').toContain(beta.map((f) => (f.data as { text: string }).text).join(''));
    expect(deltas.every((f) => /^\d+\.\d+$/.test(f.id ?? ''))).toBe(true);
    const other = await platform.tenantWithKeys('runs-feed-other', ['viewer']);
    const hidden = await platform.request('GET', `/v1/runs/${id}/events`, other.keys.viewer);
    expect(hidden.status).toBe(404);
  });

  it('lists runs by team and status; reads are scoped to the tenant', async () => {
    const list = await call('GET', '/v1/runs?teamId=vote&status=completed', keys.viewer);
    expect((list.body as { data: RunBody[] }).data.map((r) => r.output)).toEqual(['maybe', 'YES']);
    const other = await platform.tenantWithKeys('runs-other', ['viewer']);
    const id = (list.body as { data: RunBody[] }).data[0]!.id;
    expect((await call('GET', `/v1/runs/${id}`, other.keys.viewer)).status).toBe(404);
    expect((await call('GET', '/v1/runs?status=done', keys.viewer)).status).toBe(400);
    expect((await call('POST', '/v1/runs', keys.viewer, { teamId: 'vote', input: 'x' })).status).toBe(403);
    expect((await call('POST', '/v1/runs', keys.editor, { teamId: 'nope', input: 'x' })).status).toBe(404);
    const keyed = (input = 'once') =>
      platform
        .request(
          'POST',
          '/v1/runs',
          keys.editor,
          { teamId: 'vote', input },
          { 'idempotency-key': 'run-once-1' },
        )
        .then(answerOf);
    const [first, again] = [await keyed(), await keyed()];
    expect(first.status).toBe(201);
    expect((again.body as RunBody).id).toBe((first.body as RunBody).id);
    // The key again with another body: 409 naming it, no second run.
    const changed = await keyed('twice');
    expect(changed.status).toBe(409);
    expect(JSON.stringify(changed.body)).toContain('Idempotency-Key');
    // Pages: limit and cursor as GET /v1/conversations, newest first, no run twice, none left out.
    const all = ((await call('GET', '/v1/runs?limit=100', keys.viewer)).body as { data: RunBody[] }).data;
    const page = async (cursor?: string) =>
      (await call('GET', `/v1/runs?limit=2${cursor ? `&cursor=${cursor}` : ''}`, keys.viewer)).body as {
        data: RunBody[];
        nextCursor: string | null;
      };
    const one = await page();
    const two = await page(one.nextCursor!);
    expect([...one.data, ...two.data].map((r) => r.id)).toEqual(all.slice(0, 4).map((r) => r.id));
    expect((await call('GET', '/v1/runs?cursor=nope!', keys.viewer)).status).toBe(400);
    expect(JSON.stringify((await call('GET', '/v1/runs?cursor=bm9wZQ', keys.viewer)).body)).toContain(
      'cursor',
    );
  });
});
