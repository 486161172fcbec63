// Teams as tenant configuration through the public API, with the services as processes on NATS
// and FerretDB: a team is stored and read back, bad definitions are 400 naming the field and
// write nothing, roles and tenants are kept apart (API.md "Teams and runs").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { startGatewayPlatform } from './support/gateway-platform.js';
import { answerOf } from './support/http.js';

describe('teams, end to end', () => {
  let platform: GatewayPlatform;
  let keys: Record<'admin' | 'editor' | 'viewer', string>;
  let otherAdmin: string;

  const team = {
    topology: 'pipeline',
    members: [
      { agentId: 'researcher', role: 'Researcher', position: 1 },
      { agentId: 'writer', role: 'Writer', position: 2 },
    ],
    aggregation: 'last',
  };
  const put = (key: string, teamId: string, body: unknown) =>
    platform.request('PUT', `/v1/teams/${teamId}`, key, body).then(answerOf);
  const refusal = async (body: unknown) => {
    const answer = await put(keys.admin, 'bad', body);
    expect(answer.status).toBe(400);
    const problem = answer.body as { code: string; detail: string };
    expect(problem.code).toBe('invalid_request');
    return problem.detail;
  };

  beforeAll(async () => {
    platform = await startGatewayPlatform('teams');
    ({ keys } = await platform.tenantWithKeys('teams-a', ['admin', 'editor', 'viewer']));
    otherAdmin = (await platform.tenantWithKeys('teams-b', ['admin'])).keys.admin;
    for (const agentId of ['researcher', 'writer', 'lead']) {
      const agent = await platform.request('PUT', `/v1/agents/${agentId}`, keys.admin, {
        model: 'openai:gpt-4o-mini',
      });
      expect(agent.status).toBe(200);
    }
  }, 180_000);

  afterAll(async () => {
    await platform?.stop();
  });

  it('stores a team with its defaults and reads it back; viewers read, editors may not write', async () => {
    const stored = await put(keys.admin, 'blog', team);
    expect(stored.status).toBe(200);
    expect(stored.body).toEqual({
      id: 'blog',
      ...team,
      timeoutMs: 1_800_000,
      maxSteps: 50,
      contextCharLimit: 8_000,
    });
    const read = await answerOf(await platform.request('GET', '/v1/teams/blog', keys.viewer));
    expect(read.body).toEqual(stored.body);
    const list = await answerOf(await platform.request('GET', '/v1/teams', keys.viewer));
    expect(list.body).toEqual({ data: [stored.body] });
    expect((await put(keys.editor, 'blog', team)).status).toBe(403);
  });

  it('refuses bad definitions naming the field, and writes nothing', async () => {
    const member = (agentId: string, position: number) => ({ agentId, role: agentId, position });
    expect(await refusal({ ...team, members: [member('researcher', 1), member('ghost', 2)] })).toMatch(
      /members\[1\]\.agentId.*unknown agent "ghost"/,
    );
    expect(await refusal({ ...team, members: [member('researcher', 1), member('writer', 1)] })).toMatch(
      /members\[1\]\.position/,
    );
    expect(await refusal({ ...team, topology: 'hierarchical', manager: 'writer' })).toMatch(
      /manager must not be among the members/,
    );
    expect(await refusal({ ...team, topology: 'debate' })).toMatch(/rounds is required by the debate/);
    expect(await refusal({ ...team, topology: 'round_robin' })).toMatch(/rounds is required/);
    expect(await refusal({ ...team, colour: 'red' })).toMatch(/colour: unknown field/);
    expect(await refusal({ ...team, members: 'all' })).toMatch(/members must be a list/);
    const bad = await answerOf(await platform.request('GET', '/v1/teams/bad', keys.admin));
    expect(bad.status).toBe(404);
  });

  it("keeps tenants apart: another tenant's team is 404 to read and to delete", async () => {
    expect((await put(keys.admin, 'apart', team)).status).toBe(200);
    expect((await platform.request('GET', '/v1/teams/apart', otherAdmin)).status).toBe(404);
    expect((await platform.request('DELETE', '/v1/teams/apart', otherAdmin)).status).toBe(404);
    // The other tenant has no such agents, so the same definition is refused there.
    expect((await put(otherAdmin, 'apart', team)).status).toBe(400);
    expect((await platform.request('DELETE', '/v1/teams/apart', keys.admin)).status).toBe(204);
    expect((await platform.request('GET', '/v1/teams/apart', keys.admin)).status).toBe(404);
  });
});
