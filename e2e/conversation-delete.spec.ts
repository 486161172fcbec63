// DELETE /v1/conversations/{id} end to end (API.md "Conversation management"), with the gateway,
// agent, tools and audit as processes on NATS and FerretDB and the fake OpenAI server as the model:
// a conversation whose marker string is in its title, a user message, a tool argument and the tool's
// result, a denied approval's reason and a feedback comment sent with an Idempotency-Key is deleted (204); then every route answers 404 (HTTP and gRPC), the marker is found in no
// document of any collection of the database (log, snapshots, projections, ledger, indexes
// included) nor in any message the JetStream stream retains, usage totals are unchanged and the
// audit trail shows who deleted it. Another tenant's DELETE is 404 and changes nothing; a second
// DELETE is 404. Also: a conversation deleted while its turn waits for an approval, a team run's
// member conversation (the run's stream is erased with it), and one whose sub-agent conversations
// go with it.
import { status } from '@grpc/grpc-js';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import type { ProcessHandle } from '@keel/testkit';
import { eventually, fakeReply, freePort, lastUserMessageIncludes } from '@keel/testkit';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { startGatewayPlatform } from './support/gateway-platform.js';
import { codeOf, conversationsClient } from './support/grpc-client.js';
import { answerOf, openTurnStream } from './support/http.js';
import { startAudit } from './support/platform.js';

const MARKER = 'okapi-7c1e-erase-me';

/** Every document of every collection of the platform's database, as text, with where it was. */
const databaseDump = async (mongodbUrl: string): Promise<Array<{ collection: string; text: string }>> => {
  const client = await MongoClient.connect(mongodbUrl);
  try {
    const db = client.db();
    const dump: Array<{ collection: string; text: string }> = [];
    for (const { name } of await db.listCollections().toArray()) {
      for (const document of await db.collection(name).find({}).toArray())
        dump.push({ collection: name, text: JSON.stringify(document) });
      for (const index of await db.collection(name).indexes())
        dump.push({ collection: `${name} (index)`, text: JSON.stringify(index) });
    }
    return dump;
  } finally {
    await client.close();
  }
};

/** Every message the JetStream stream retains, as text. */
const streamDump = async (natsUrl: string, stream: string): Promise<string[]> => {
  const nc = await connect({ servers: natsUrl });
  try {
    const jsm = await jetstreamManager(nc);
    const { state } = await jsm.streams.info(stream);
    const texts: string[] = [];
    for (let seq = state.first_seq; seq <= state.last_seq && state.messages > 0; seq += 1) {
      const message = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
      if (message) texts.push(`${message.subject} ${message.string()}`);
    }
    return texts;
  } finally {
    await nc.close();
  }
};

describe('DELETE /v1/conversations/{id}: crypto-shredding (gateway, agent, tools, audit as processes)', () => {
  let platform: GatewayPlatform;
  let audit: ProcessHandle;
  const acme = { id: '', keys: { admin: '', editor: '', viewer: '' } };
  const globex = { id: '', keys: { editor: '' } };

  const call = async (method: string, path: string, key: string, body?: unknown) =>
    answerOf(await platform.request(method, path, key, body));

  beforeAll(async () => {
    const auditPort = await freePort();
    platform = await startGatewayPlatform('erase', {
      gatewayEnv: { AUDIT_GRPC_URL: `127.0.0.1:${auditPort}` },
    });
    audit = await startAudit(platform.env, auditPort);
    Object.assign(acme, await platform.tenantWithKeys('Acme', ['admin', 'editor', 'viewer'] as const));
    Object.assign(globex, await platform.tenantWithKeys('Globex', ['editor'] as const));
    const secret = await call('POST', '/v1/webhook-secret', acme.keys.admin);
    platform.webhook.setSecret((secret.body as { secret: string }).secret);
    for (const [path, body] of [
      [
        '/v1/tools/lookup',
        {
          description: 'Look an order up',
          inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
          kind: 'webhook',
          url: platform.webhook.url,
        },
      ],
      [
        '/v1/tools/refund',
        {
          description: 'Refund an order',
          inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
          kind: 'webhook',
          url: platform.webhook.url,
          approval: 'always',
        },
      ],
      ['/v1/agents/helper', { model: 'openai:gpt-4o-mini', tools: ['lookup', 'refund'], maxSteps: 4 }],
      ['/v1/agents/scout', { model: 'openai:gpt-4o-mini', maxSteps: 2 }],
      ['/v1/agents/boss', { model: 'openai:gpt-4o-mini', agents: ['scout'], maxSteps: 3 }],
      ['/v1/providers/openai', { baseUrl: platform.fake.url, apiKey: 'sk-tenant-e2e' }],
    ] as const)
      expect((await call('PUT', path, acme.keys.admin, body)).status).toBe(200);
  }, 180_000);

  afterAll(async () => {
    await audit?.kill('SIGTERM');
    await platform?.stop();
  });

  it('erases the content everywhere, answers 404 on every route, keeps usage and the audit entry', async () => {
    platform.fake.on(
      lastUserMessageIncludes(MARKER),
      fakeReply.toolCalls([{ name: 'lookup', arguments: { id: MARKER } }]),
      fakeReply.text(`Order ${MARKER} is shipped.`),
    );
    platform.fake.on(
      lastUserMessageIncludes('[refund]'),
      fakeReply.toolCalls([{ name: 'refund', arguments: { id: 'order-1' } }]),
      fakeReply.text('Not refunded then.'),
    );
    const created = await call('POST', '/v1/conversations', acme.keys.editor, {
      agentId: 'helper',
      title: `About ${MARKER}`,
    });
    expect(created.status).toBe(201);
    const { id } = created.body as { id: string };
    const stream = await openTurnStream(platform.base, acme.keys.editor, id, {
      content: `Where is ${MARKER}?`,
    });
    const frames = await stream.until(
      (f) => f.event === 'turn.completed' || f.event === 'turn.failed',
      30_000,
    );
    stream.close();
    expect(frames.at(-1)?.event).toBe('turn.completed');
    // The marker went everywhere content goes: the message, the call's arguments, its result.
    expect(platform.webhook.hits.some((hit) => hit.body.args.id === MARKER)).toBe(true);
    const result = frames.find((f) => f.event === 'tool.result');
    expect(JSON.stringify(result?.data)).toContain(MARKER);
    // Free text copied beside the log: a denied approval's reason (the audit trail) and a feedback
    // comment answered under an Idempotency-Key (the response kept for retries, sealed).
    const approvalTurn = await openTurnStream(platform.base, acme.keys.editor, id, {
      content: '[refund] it',
    });
    const approval = (await approvalTurn.until((f) => f.event === 'approval.required', 30_000)).at(-1)!;
    const { approvalId } = approval.data as { approvalId: string };
    const decided = await call('POST', `/v1/conversations/${id}/approvals/${approvalId}`, acme.keys.editor, {
      decision: 'deny',
      reason: `not ${MARKER}`,
    });
    expect(decided.status).toBe(200);
    frames.push(...(await approvalTurn.until((f) => f.event === 'turn.completed', 30_000)));
    approvalTurn.close();
    const { messageId } = frames.find((f) => f.event === 'message.completed')!.data as { messageId: string };
    const feedback = await platform.request(
      'POST',
      `/v1/conversations/${id}/messages/${messageId}/feedback`,
      acme.keys.editor,
      { rating: 'up', comment: `great ${MARKER}` },
      { 'Idempotency-Key': 'feedback-1' },
    );
    expect(feedback.status).toBe(200);
    // Usage as the turns' usage frames add up: every model call counted before the DELETE.
    const prompted = frames
      .filter((f) => f.event === 'usage')
      .reduce((sum, f) => sum + (f.data as { promptTokens: number }).promptTokens, 0);
    const today = new Date().toISOString().slice(0, 10);
    const usage = async () =>
      (await call('GET', `/v1/usage?from=${today}&to=${today}&groupBy=agent`, acme.keys.admin)).body as {
        totals: unknown;
      };
    const before = await eventually(async () => {
      const body = await usage();
      expect(body.totals).toMatchObject({ turns: 2, promptTokens: prompted });
      expect(body).toMatchObject({ rows: [{ key: 'helper', feedbackUp: 1 }] });
      return body;
    });

    // Before: the log, the bus and kept responses hold the content sealed; the conversation index
    // holds its title, the audit trail the approval's reason (both dropped at the DELETE).
    const seen = await eventually(async () => {
      const found = (await databaseDump(platform.env.MONGODB_URL!)).filter((d) => d.text.includes(MARKER));
      expect(new Set(found.map((d) => d.collection))).toEqual(new Set(['conversation_index', 'audit_trail']));
      return found;
    });
    expect(seen.length).toBeGreaterThan(0);

    // Another tenant's DELETE: 404, and nothing changed.
    expect((await call('DELETE', `/v1/conversations/${id}`, globex.keys.editor)).status).toBe(404);
    expect((await call('DELETE', `/v1/conversations/${id}`, acme.keys.viewer)).status).toBe(403);
    expect((await call('GET', `/v1/conversations/${id}`, acme.keys.viewer)).status).toBe(200);

    const deleted = await call('DELETE', `/v1/conversations/${id}`, acme.keys.editor);
    expect(deleted.status).toBe(204);
    // A retry of the kept feedback response: its conversation is gone, so is the response.
    const retried = await platform.request(
      'POST',
      `/v1/conversations/${id}/messages/${messageId}/feedback`,
      acme.keys.editor,
      { rating: 'up', comment: `great ${MARKER}` },
      { 'Idempotency-Key': 'feedback-1' },
    );
    expect(retried.status).toBe(404);

    const routes: Array<[string, string, unknown?]> = [
      ['GET', `/v1/conversations/${id}`],
      ['GET', `/v1/conversations/${id}/events`],
      ['POST', `/v1/conversations/${id}/messages`, { content: 'again' }],
      [
        'POST',
        `/v1/conversations/${id}/approvals/00000000-0000-7000-8000-000000000000`,
        { decision: 'approve' },
      ],
      ['POST', `/v1/conversations/${id}/cancel`],
      ['POST', `/v1/conversations/${id}/tool-results/call-1`, { ok: true, result: {} }],
      ['POST', `/v1/conversations/${id}/messages/m-1/feedback`, { rating: 'up' }],
      ['PATCH', `/v1/conversations/${id}`, { title: 'renamed' }],
      ['DELETE', `/v1/conversations/${id}`],
    ];
    for (const [method, path, body] of routes)
      expect({ method, path, status: (await call(method, path, acme.keys.editor, body)).status }).toEqual({
        method,
        path,
        status: 404,
      });
    const grpc = conversationsClient(platform.grpcAddress);
    try {
      expect(await codeOf(grpc.unary('getConversation', acme.keys.viewer, { conversationId: id }))).toBe(
        status.NOT_FOUND,
      );
    } finally {
      grpc.close();
    }
    // The list (a projection) drops it once its consumer has seen the deletion.
    await eventually(async () => {
      const list = await call('GET', '/v1/conversations', acme.keys.viewer);
      expect((list.body as { data: Array<{ id: string }> }).data.map((c) => c.id)).not.toContain(id);
    });

    // The audit trail drops the reason when its projector has seen the deletion, as the list does.
    await eventually(async () => {
      const dump = await databaseDump(platform.env.MONGODB_URL!);
      expect(dump.length).toBeGreaterThan(0);
      expect(dump.filter((d) => d.text.includes(MARKER)).map((d) => d.collection)).toEqual([]);
    });
    const retained = await streamDump(platform.env.NATS_URL!, platform.env.KEEL_NATS_STREAM!);
    expect(retained.length).toBeGreaterThan(0);
    expect(retained.filter((text) => text.includes(MARKER))).toEqual([]);

    expect(await usage()).toEqual(before);
    const denial = await call('GET', '/v1/audit?type=ApprovalDecided', acme.keys.admin);
    expect((denial.body as { data: unknown[] }).data).toContainEqual(
      expect.objectContaining({
        target: `approval:${approvalId}`,
        details: expect.objectContaining({ decision: 'deny' }),
      }),
    );
    const trail = await eventually(async () => {
      const answer = await call('GET', '/v1/audit?type=ConversationDeleted', acme.keys.admin);
      const entries = (answer.body as { data: Array<Record<string, unknown>> }).data;
      expect(entries).toHaveLength(1);
      return entries[0]!;
    });
    expect(trail).toMatchObject({ type: 'ConversationDeleted', target: `conversation:${id}` });
    expect(trail.actor).toMatchObject({ role: 'editor' });
  }, 120_000);

  it('deletes a conversation whose turn waits for an approval: the approval leaves GET /v1/approvals', async () => {
    platform.fake.on(
      lastUserMessageIncludes('[waiting]'),
      fakeReply.toolCalls([{ name: 'refund', arguments: { id: 'order-9' } }]),
    );
    const created = await call('POST', '/v1/conversations', acme.keys.editor, { agentId: 'helper' });
    const { id } = created.body as { id: string };
    const stream = await openTurnStream(platform.base, acme.keys.editor, id, {
      content: '[waiting] refund it',
    });
    await stream.until((f) => f.event === 'approval.required', 30_000);
    stream.close();
    const pending = async () =>
      (
        (await call('GET', '/v1/approvals?status=pending', acme.keys.admin)).body as {
          data: Array<{ conversationId: string }>;
        }
      ).data.map((a) => a.conversationId);
    await eventually(async () => expect(await pending()).toContain(id));

    expect((await call('DELETE', `/v1/conversations/${id}`, acme.keys.editor)).status).toBe(204);
    await eventually(async () => expect(await pending()).not.toContain(id));
    expect((await call('GET', `/v1/conversations/${id}`, acme.keys.viewer)).status).toBe(404);
  }, 60_000);

  it("deleting a team run's member conversation erases the run's stream too (its copies of the content)", async () => {
    const RUN_MARKER = 'heron-5b2d-run-erase';
    platform.fake.on(lastUserMessageIncludes(RUN_MARKER), `Counted ${RUN_MARKER}.`);
    const team = await call('PUT', '/v1/teams/pair', acme.keys.admin, {
      members: [{ agentId: 'scout', role: 'SCOUT', position: 1 }],
      topology: 'pipeline',
      aggregation: 'last',
    });
    expect(team.status, JSON.stringify(team.body)).toBe(200);
    const started = await call('POST', '/v1/runs', acme.keys.editor, {
      teamId: 'pair',
      input: `[run] ${RUN_MARKER}`,
    });
    expect(started.status).toBe(201);
    const runId = (started.body as { id: string }).id;
    const done = await eventually(
      async () => {
        const run = (await call('GET', `/v1/runs/${runId}`, acme.keys.viewer)).body as {
          status: string;
          output: string;
          tasks: Array<{ conversationId: string }>;
        };
        expect(run.status).toBe('completed');
        return run;
      },
      { timeoutMs: 30_000 },
    );
    expect(done.output).toContain(RUN_MARKER);

    const member = done.tasks[0]!.conversationId;
    expect((await call('DELETE', `/v1/conversations/${member}`, acme.keys.editor)).status).toBe(204);
    for (const path of [`/v1/runs/${runId}`, `/v1/runs/${runId}/events`])
      expect({ path, status: (await call('GET', path, acme.keys.viewer)).status }).toEqual({
        path,
        status: 404,
      });
    const runs = await call('GET', '/v1/runs?teamId=pair', acme.keys.viewer);
    expect((runs.body as { data: Array<{ id: string }> }).data.map((r) => r.id)).not.toContain(runId);
    const dump = await databaseDump(platform.env.MONGODB_URL!);
    expect(dump.filter((d) => d.text.includes(RUN_MARKER)).map((d) => d.collection)).toEqual([]);
    const retained = await streamDump(platform.env.NATS_URL!, platform.env.KEEL_NATS_STREAM!);
    expect(retained.filter((text) => text.includes(RUN_MARKER))).toEqual([]);
  }, 60_000);

  it("deletes a conversation's sub-agent conversations with it (each holds the task its call gave)", async () => {
    platform.fake.on(
      lastUserMessageIncludes('[boss]'),
      fakeReply.toolCall('agent__scout', { task: '[scout] count the owls' }),
      'The scout counted them.',
    );
    platform.fake.on(lastUserMessageIncludes('[scout]'), 'Seven owls.');
    const created = await call('POST', '/v1/conversations', acme.keys.editor, { agentId: 'boss' });
    const { id } = created.body as { id: string };
    const stream = await openTurnStream(platform.base, acme.keys.editor, id, {
      content: '[boss] how many owls?',
    });
    const frames = await stream.until(
      (f) => f.event === 'turn.completed' || f.event === 'turn.failed',
      30_000,
    );
    stream.close();
    expect(frames.at(-1)?.event).toBe('turn.completed');
    const child = (frames.find((f) => f.event === 'tool.call')?.data as { childConversationId?: string })
      .childConversationId!;
    expect((await call('GET', `/v1/conversations/${child}`, acme.keys.viewer)).status).toBe(200);

    expect((await call('DELETE', `/v1/conversations/${id}`, acme.keys.editor)).status).toBe(204);
    for (const path of [`/v1/conversations/${child}`, `/v1/conversations/${child}/events`])
      expect((await call('GET', path, acme.keys.viewer)).status).toBe(404);
  }, 60_000);
});
