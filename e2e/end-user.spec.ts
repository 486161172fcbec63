// The end user in the loop, with the gateway, agent and tools as processes on NATS and FerretDB and
// the fake OpenAI server as the model (API.md "The client in the loop"): a message's `context` in its
// own prompt section after the stable prefix and on the message in GET, refused over 32 KiB or off
// the agent's contextSchema; `X-Keel-User-Role` hiding a tool from a viewer (and refusing the call
// the model makes anyway); webhook bodies carrying the end user and the conversation's metadata;
// instructions filled per turn, an unknown variable refused at PUT; exceptUserRoles skipping an
// approval for a listed role only.
import { fakeReply, lastUserMessageIncludes } from '@keel/testkit';
import type { FakeChatRequest } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { startGatewayPlatform } from './support/gateway-platform.js';
import { answerOf, openTurnStream } from './support/http.js';
import type { TurnEvent } from '@keel/proto/keel/conversations/v1/conversations';
import { conversationsClient, sendStatus } from './support/grpc-client.js';

const INSTRUCTIONS = 'You edit {{metadata.siteName}} for {{user.id}} ({{user.role}}); it is {{now}}.';
const CONTEXT_SCHEMA = {
  type: 'object',
  properties: { page: { type: 'string' }, selection: { type: 'string' } },
  required: ['page'],
};

describe('the end user (gateway, agent, tools as processes)', () => {
  let platform: GatewayPlatform;
  let keys: Record<'admin' | 'editor', string>;
  let conversationId: string;

  const put = (path: string, body: unknown) => platform.request('PUT', path, keys.admin, body).then(answerOf);
  const webhookTool = (extra: Record<string, unknown>) => ({
    description: 'A site tool',
    inputSchema: { type: 'object', properties: { id: { type: 'string' } } },
    kind: 'webhook',
    url: platform.webhook.url,
    ...extra,
  });
  const send = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    platform
      .request('POST', `/v1/conversations/${conversationId}/messages`, keys.editor, body, headers)
      .then(answerOf);
  const conversation = async () =>
    (await answerOf(await platform.request('GET', `/v1/conversations/${conversationId}`, keys.editor)))
      .body as { version: number; messages: Array<{ role: string; content: string; context?: unknown }> };
  /** Runs one turn as `user` with `role`; its frames up to the first of `until`. */
  const turn = async (body: Record<string, unknown>, role: string, until = ['turn.completed']) => {
    const headers = { 'x-keel-user': `user-${role}`, 'x-keel-user-role': role };
    const stream = await openTurnStream(platform.base, keys.editor, conversationId, body, headers);
    const frames = await stream.until((f) => [...until, 'turn.failed'].includes(f.event ?? ''), 30_000);
    stream.close();
    return frames;
  };
  const requestWith = (marker: string): FakeChatRequest[] =>
    platform.fake.requests.flatMap((r) =>
      r.body && JSON.stringify(r.body.messages).includes(marker) ? [r.body] : [],
    );

  beforeAll(async () => {
    platform = await startGatewayPlatform('enduser');
    ({ keys } = await platform.tenantWithKeys('enduser-a', ['admin', 'editor']));
    const secret = await answerOf(await platform.request('POST', '/v1/webhook-secret', keys.admin));
    platform.webhook.setSecret((secret.body as { secret: string }).secret);
    expect((await put('/v1/tools/lookup_page', webhookTool({}))).status).toBe(200);
    const hidden = await put('/v1/tools/delete_page', webhookTool({ userRoles: ['owner', 'editor'] }));
    expect(hidden.status).toBe(200);
    expect(hidden.body).toMatchObject({ userRoles: ['owner', 'editor'] });
    const publish = await put(
      '/v1/tools/publish_page',
      webhookTool({ approval: { when: { type: 'object' }, exceptUserRoles: ['owner'] } }),
    );
    expect(publish.status).toBe(200);
    const agent = await put('/v1/agents/site', {
      model: 'openai:gpt-4o-mini',
      instructions: INSTRUCTIONS,
      tools: ['lookup_page', 'delete_page', 'publish_page'],
      timeZone: 'Europe/Paris',
      contextSchema: CONTEXT_SCHEMA,
    });
    expect(agent.status).toBe(200);
    expect(agent.body).toMatchObject({ timeZone: 'Europe/Paris', contextSchema: CONTEXT_SCHEMA });
    const created = await answerOf(
      await platform.request('POST', '/v1/conversations', keys.editor, {
        agentId: 'site',
        metadata: { siteName: 'Acme Docs' },
      }),
    );
    conversationId = (created.body as { id: string }).id;
  }, 180_000);

  afterAll(async () => {
    await platform?.stop();
  });

  it('shows the context to the model after the filled instructions, and on the message in GET', async () => {
    platform.fake.on(lastUserMessageIncludes('[eu-ctx]'), fakeReply.text('You are on the home page.'));
    const context = { page: 'home', selection: 'hero banner' };
    const frames = await turn({ content: 'Where am I? [eu-ctx]', context }, 'owner');
    expect(frames.at(-1)).toMatchObject({ event: 'turn.completed' });

    const [request] = requestWith('[eu-ctx]');
    const system = String(request!.messages[0]!.content);
    // The instructions, filled for this turn: metadata, end user, now in Europe/Paris.
    expect(system).toMatch(
      /# Instructions\nYou edit Acme Docs for user-owner \(owner\); it is \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+0[12]:00\./,
    );
    // The context in its own section, after the stable prefix (instructions and tools).
    const section = system.indexOf('\n\n# Context\n');
    expect(section).toBeGreaterThan(system.indexOf('# Tools'));
    expect(system.slice(section)).toContain(JSON.stringify(context));

    const { messages } = await conversation();
    expect(messages.find((m) => m.content.includes('[eu-ctx]'))).toMatchObject({ role: 'user', context });
  });

  it('refuses a context over 32 KiB or off the schema, and a malformed role, writing nothing', async () => {
    const before = await conversation();
    const refusals: Array<[Record<string, unknown>, Record<string, string>, RegExp]> = [
      [{ content: 'x', context: { page: 'p', blob: 'x'.repeat(33 * 1024) } }, {}, /^context /],
      [{ content: 'x', context: { page: 5 } }, {}, /context\.page/],
      [{ content: 'x', context: { selection: 'no page' } }, {}, /context/],
      [{ content: 'x', context: ['not', 'an', 'object'] }, {}, /^context /],
      [{ content: 'x', context: { page: 'p' } }, { 'x-keel-user-role': 'two words' }, /X-Keel-User-Role/],
    ];
    for (const [body, headers, detail] of refusals) {
      const refused = await send(body, headers);
      expect(refused.status).toBe(400);
      expect((refused.body as { code: string; detail: string }).code).toBe('invalid_request');
      expect((refused.body as { detail: string }).detail).toMatch(detail);
    }
    const after = await conversation();
    expect(after.version).toBe(before.version);
    expect(after.messages).toHaveLength(before.messages.length);
  });

  it("hides a tool from a viewer, refuses the model's call to it, and sends the end user and metadata to webhooks", async () => {
    platform.fake.on(
      lastUserMessageIncludes('[eu-viewer]'),
      fakeReply.toolCalls([
        { name: 'lookup_page', arguments: { id: 'home' } },
        { name: 'delete_page', arguments: { id: 'home' } },
      ]),
      fakeReply.text('I looked the page up; deleting it is not allowed for you.'),
    );
    const hitsBefore = platform.webhook.hits.length;
    const frames = await turn(
      { content: 'Delete the home page [eu-viewer]', context: { page: 'home' } },
      'viewer',
    );
    expect(frames.at(-1)).toMatchObject({ event: 'turn.completed' });

    // The model was not told of delete_page (its userRoles leave viewers out); the others it was.
    const offered = (requestWith('[eu-viewer]')[0]!.tools ?? []).map((t) => t.function.name).sort();
    expect(offered).toEqual(['lookup_page', 'publish_page']);
    const results = frames.filter((f) => f.event === 'tool.result').map((f) => f.data);
    expect(results).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'lookup_page', ok: true }),
        expect.objectContaining({
          name: 'delete_page',
          ok: false,
          error: expect.objectContaining({ code: 'forbidden_for_user_role' }),
        }),
      ]),
    );
    // Only lookup_page reached the webhook, signed, with the end user and the conversation's metadata.
    const hits = platform.webhook.hits.slice(hitsBefore);
    expect(hits).toHaveLength(1);
    expect(hits[0]!.signatureValid).toBe(true);
    expect(hits[0]!.body).toMatchObject({
      conversationId,
      args: { id: 'home' },
      user: { id: 'user-viewer', role: 'viewer' },
      metadata: { siteName: 'Acme Docs' },
    });
  });

  it('skips the approval for a role exceptUserRoles lists, and asks for it for another role', async () => {
    const calls = fakeReply.toolCalls([{ name: 'publish_page', arguments: { id: 'home' } }]);
    platform.fake.on(lastUserMessageIncludes('[eu-owner]'), calls, fakeReply.text('Published.'));
    const owner = await turn({ content: 'Publish home [eu-owner]', context: { page: 'home' } }, 'owner');
    expect(owner.map((f) => f.event)).not.toContain('approval.required');
    expect(owner.find((f) => f.event === 'approval.decided')).toMatchObject({ data: { by: 'policy' } });
    expect(owner.find((f) => f.event === 'tool.result')).toMatchObject({
      data: { name: 'publish_page', ok: true },
    });

    platform.fake.on(lastUserMessageIncludes('[eu-member]'), calls, fakeReply.text('Published.'));
    const member = await turn({ content: 'Publish home [eu-member]', context: { page: 'home' } }, 'member', [
      'approval.required',
    ]);
    expect(member.at(-1)).toMatchObject({ event: 'approval.required', data: { name: 'publish_page' } });
    const cancelled = await platform.request(
      'POST',
      `/v1/conversations/${conversationId}/cancel`,
      keys.editor,
    );
    expect(cancelled.status).toBe(202);
  });

  it('takes the context and the end-user role over gRPC SendMessage too', async () => {
    const grpc = conversationsClient(platform.grpcAddress);
    try {
      platform.fake.on(lastUserMessageIncludes('[eu-grpc]'), fakeReply.text('Seen over gRPC.'));
      const events: string[] = [];
      await new Promise<void>((resolve, reject) => {
        const call = grpc.stream(keys.editor, {
          conversationId,
          content: 'Where am I? [eu-grpc]',
          contextJson: JSON.stringify({ page: 'pricing' }),
          userRole: 'viewer',
        });
        call.on('data', (event: TurnEvent) => events.push(event.event));
        call.on('error', reject);
        call.on('end', resolve);
      });
      expect(events.at(-1)).toBe('turn.completed');
      const [request] = requestWith('[eu-grpc]');
      expect(String(request!.messages[0]!.content)).toContain('# Context\n');
      expect(String(request!.messages[0]!.content)).toContain('{"page":"pricing"}');
      expect((request!.tools ?? []).map((t) => t.function.name)).not.toContain('delete_page');
      // Off the schema, or a malformed role: INVALID_ARGUMENT (3) naming the field.
      const offSchema = await sendStatus(grpc, keys.editor, {
        conversationId,
        content: 'x',
        contextJson: JSON.stringify({ page: 7 }),
      });
      expect(offSchema).toMatchObject({ code: 3, details: expect.stringMatching(/context\.page/) });
      const badRole = await sendStatus(grpc, keys.editor, { conversationId, content: 'x', userRole: 'a b' });
      expect(badRole).toMatchObject({ code: 3, details: expect.stringMatching(/user_role/) });
    } finally {
      grpc.close();
    }
  });

  it('refuses an unknown template variable, a bad zone, a broken contextSchema and bad userRoles at PUT', async () => {
    const agent = (extra: Record<string, unknown>) =>
      put('/v1/agents/site', { model: 'openai:gpt-4o-mini', tools: ['lookup_page'], ...extra });
    const refusals: Array<[Promise<{ status: number; body: unknown }>, RegExp]> = [
      [
        agent({ instructions: 'Hello {{user.name}} on {{metadata.siteName}}' }),
        /^instructions: .*\{\{user\.name\}\}/,
      ],
      [agent({ timeZone: 'Mars/Olympus' }), /^timeZone /],
      [agent({ contextSchema: { type: 'no-such-type' } }), /^contextSchema /],
      [put('/v1/tools/bad_roles', webhookTool({ userRoles: ['two words'] })), /^userRoles /],
      [
        put('/v1/tools/bad_except', webhookTool({ approval: { when: {}, exceptUserRoles: 'owner' } })),
        /exceptUserRoles/,
      ],
    ];
    for (const [answer, detail] of refusals) {
      const refused = await answer;
      expect(refused.status).toBe(400);
      expect((refused.body as { detail: string }).detail).toMatch(detail);
    }
    // Nothing written: the agent is as it was.
    const stored = await answerOf(await platform.request('GET', '/v1/agents/site', keys.admin));
    expect(stored.body).toMatchObject({ instructions: INSTRUCTIONS, timeZone: 'Europe/Paris' });
  });
});
