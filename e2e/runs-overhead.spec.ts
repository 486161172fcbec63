// The orchestration overhead of a run per task, the services as processes on NATS and FerretDB
// and the fake provider answering at once: a round_robin run of one member, ROUNDS tasks in a
// row, against the same number of turns sent one after another to a conversation of that agent
// (each read to its end on the turn stream). What the run adds per task is the run's events
// (TaskStarted, TaskCompleted) and the hops between them: the manager reacting to the turn's end,
// recording the task, deciding the next one, creating its conversation and submitting its turn.
import { systemPromptIncludes } from '@keel/testkit';
import { openSse } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { startGatewayPlatform } from './support/gateway-platform.js';
import { answerOf, openTurnStream } from './support/http.js';

const ROUNDS = Number(process.env.RUN_OVERHEAD_ROUNDS ?? 5);

describe('run orchestration overhead per task', () => {
  let platform: GatewayPlatform;
  let keys: Record<'admin' | 'editor', string>;
  const call = async (method: string, path: string, key: string, body?: unknown) =>
    answerOf(await platform.request(method, path, key, body));

  beforeAll(async () => {
    platform = await startGatewayPlatform('runs_overhead');
    ({ keys } = await platform.tenantWithKeys('runs-overhead', ['admin', 'editor']));
    await call('PUT', '/v1/providers/openai', keys.admin, { baseUrl: platform.fake.url, apiKey: 'sk-bench' });
    await call('PUT', '/v1/agents/solo', keys.admin, {
      model: 'openai:gpt-4o-mini',
      instructions: 'agent:solo;',
    });
    const members = [{ agentId: 'solo', role: 'Solo', position: 1 }];
    const team = { topology: 'round_robin', rounds: ROUNDS, members, contextCharLimit: 0 };
    expect((await call('PUT', '/v1/teams/solo', keys.admin, team)).status).toBe(200);
  }, 180_000);

  afterAll(async () => {
    await platform?.stop();
  });

  /** ROUNDS turns one after another on one conversation, each read to turn.completed: total ms. */
  const directTurns = async (): Promise<number> => {
    const created = await call('POST', '/v1/conversations', keys.editor, { agentId: 'solo' });
    const id = (created.body as { id: string }).id;
    const started = performance.now();
    for (let i = 0; i < ROUNDS; i++) {
      const stream = await openTurnStream(platform.base, keys.editor, id, { content: `turn ${i}` });
      await stream.until((f) => f.event === 'turn.completed', 30_000);
      stream.close();
    }
    return performance.now() - started;
  };

  /** One run of ROUNDS tasks, from POST /v1/runs to run.completed on its stream: total ms. */
  const run = async (): Promise<number> => {
    const started = performance.now();
    const answer = await call('POST', '/v1/runs', keys.editor, { teamId: 'solo', input: 'go' });
    const id = (answer.body as { id: string }).id;
    const stream = await openSse(`${platform.base}/v1/runs/${id}/events`, {
      headers: { authorization: `Bearer ${keys.editor}`, accept: 'text/event-stream' },
    });
    const frames = await stream.until((f) => f.event === 'run.completed', 120_000);
    stream.close();
    expect(frames.filter((f) => f.event === 'task.completed')).toHaveLength(ROUNDS);
    return performance.now() - started;
  };

  it('measures the run time beyond its members’ own turns, per task', async () => {
    platform.fake.on(
      systemPromptIncludes('agent:solo;'),
      ...Array.from({ length: 8 * ROUNDS + 8 }, () => 'ok'),
    );
    await directTurns(); // warm-up of both paths
    await run();
    const direct: number[] = [];
    const runs: number[] = [];
    for (let round = 0; round < 2; round++) {
      direct.push(await directTurns());
      runs.push(await run());
    }
    const median = (xs: number[]) => {
      const sorted = [...xs].sort((a, b) => a - b);
      return (sorted[Math.floor((sorted.length - 1) / 2)]! + sorted[Math.ceil((sorted.length - 1) / 2)]!) / 2;
    };
    const perTurn = median(direct) / ROUNDS;
    const perTask = median(runs) / ROUNDS;
    console.log(
      `[run overhead] ${ROUNDS} tasks: turn alone ${perTurn.toFixed(0)} ms, task in a run ${perTask.toFixed(0)} ms, ` +
        `overhead ${(perTask - perTurn).toFixed(0)} ms per task (medians of 2 rounds; direct ${direct.map((d) => d.toFixed(0)).join('/')} ms, runs ${runs.map((r) => r.toFixed(0)).join('/')} ms)`,
    );
    expect(perTask).toBeGreaterThan(0);
  }, 300_000);
});
