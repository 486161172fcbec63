// Conversation management end to end (API.md "Conversation management", all but DELETE): the
// gateway, agent, tools, audit and pricing services as processes on NATS and FerretDB, the fake
// OpenAI server as the model. An edited message and a regenerated answer (the model no longer
// sees what was replaced, GET shows the new branch, the feed keeps both); PATCH in GET, in the
// list's filters and on the stream; feedback in GET and in usage by agent; an agent's autoTitle
// as one priced model call; bad inputs answered 400 naming the field, with nothing written.
import type { ProcessHandle } from '@keel/testkit';
import {
  eventually,
  fakeReply,
  freePort,
  lastUserMessageIncludes,
  openSse,
  systemPromptIncludes,
} from '@keel/testkit';
import type { SseFrame } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { startGatewayPlatform } from './support/gateway-platform.js';
import { answerOf, openTurnStream } from './support/http.js';
import { ConversationStatus } from '@keel/proto/keel/conversations/v1/conversations';
import { conversationsClient } from './support/grpc-client.js';
import { startAudit } from './support/platform.js';

interface Message {
  id: string;
  role: string;
  content: string;
  feedback?: { rating: string; comment?: string };
}
interface View {
  id: string;
  version: number;
  title?: string;
  metadata?: Record<string, string>;
  userId?: string;
  messages: Message[];
  usage: { promptTokens: number; costUsd: number };
}

const today = new Date().toISOString().slice(0, 10);

describe('conversation management (gateway, agent, tools, audit, pricing as processes)', () => {
  let platform: GatewayPlatform;
  let audit: ProcessHandle;
  let keys: Record<'admin' | 'editor' | 'viewer', string>;
  /** Another tenant's editor: every conversation of this one is a 404 to it. */
  let strangerKey: string;

  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    answerOf(await platform.request(method, path, keys.editor, body, headers));
  const view = async (id: string): Promise<View> =>
    (await call('GET', `/v1/conversations/${id}`)).body as View;
  const create = async (body: Record<string, unknown>, user = 'u-1'): Promise<string> => {
    const created = await call('POST', '/v1/conversations', body, { 'x-keel-user': user });
    expect(created.status).toBe(201);
    return (created.body as { id: string }).id;
  };
  /** Runs a turn to its end on the HTTP stream; its frames. */
  const turn = async (id: string, body: Record<string, unknown>): Promise<SseFrame[]> => {
    const stream = await openTurnStream(platform.base, keys.editor, id, body);
    const frames = await stream.until(
      (f) => f.event === 'turn.completed' || f.event === 'turn.failed',
      30_000,
    );
    stream.close();
    return frames;
  };
  /** The conversation's durable frames (the events feed from the start) up to the first `until` matches. */
  const feed = async (id: string, until: (f: SseFrame) => boolean): Promise<SseFrame[]> => {
    const stream = await openSse(`${platform.base}/v1/conversations/${id}/events`, {
      headers: { authorization: `Bearer ${keys.viewer}`, accept: 'text/event-stream' },
    });
    const frames = await stream.until(until, 30_000);
    stream.close();
    return frames;
  };
  const bad = async (method: string, path: string, body: unknown, field: string) => {
    const answer = await call(method, path, body);
    expect(answer.status).toBe(400);
    expect((answer.body as { detail: string }).detail).toContain(field);
  };
  const sentTo = (marker: string): string[] =>
    platform.fake.requests
      .filter((r) => JSON.stringify(r.body?.messages ?? '').includes(marker))
      .map((r) => JSON.stringify(r.body!.messages));

  beforeAll(async () => {
    const auditPort = await freePort();
    platform = await startGatewayPlatform('convmanage', {
      gatewayEnv: { AUDIT_GRPC_URL: `127.0.0.1:${auditPort}` },
      pricingFor: ['agent'],
    });
    audit = await startAudit(platform.env, auditPort);
    ({ keys } = await platform.tenantWithKeys('convmanage-a', ['admin', 'editor', 'viewer'] as const));
    strangerKey = (await platform.tenantWithKeys('convmanage-b', ['editor'] as const)).keys.editor;
    for (const [agentId, extra] of [
      ['plain', {}],
      ['titled', { autoTitle: true }],
    ] as const) {
      const put = await platform.request('PUT', `/v1/agents/${agentId}`, keys.admin, {
        model: 'openai:gpt-4o-mini',
        ...extra,
      });
      expect(put.status).toBe(200);
    }
  }, 180_000);

  afterAll(async () => {
    await audit?.kill('SIGTERM');
    await platform?.stop();
  });

  it('edits a message and regenerates an answer: the model sees one branch, GET the new one, the log both', async () => {
    platform.fake.on(lastUserMessageIncludes('[e1]'), fakeReply.text('Answer one.'));
    platform.fake.on(lastUserMessageIncludes('[e2]'), fakeReply.text('Answer two.'));
    platform.fake.on(
      lastUserMessageIncludes('[e3]'),
      fakeReply.text('Answer three.'),
      fakeReply.text('Answer four.'),
    );
    const id = await create({ agentId: 'plain' });
    await turn(id, { content: 'First question [e1]' });
    await turn(id, { content: 'Second question [e2]' });
    const before = await view(id);
    const [, , second, secondAnswer] = before.messages;
    expect(second).toMatchObject({ role: 'user', content: 'Second question [e2]' });

    // Bad replaceFrom: unknown, an assistant message, not a string: 400 naming it, nothing written.
    await bad(
      'POST',
      `/v1/conversations/${id}/messages`,
      { content: 'x', replaceFrom: 'nope' },
      'replaceFrom',
    );
    await bad(
      'POST',
      `/v1/conversations/${id}/messages`,
      { content: 'x', replaceFrom: secondAnswer!.id },
      'replaceFrom',
    );
    await bad('POST', `/v1/conversations/${id}/messages`, { content: 'x', replaceFrom: 7 }, 'replaceFrom');
    expect((await view(id)).version).toBe(before.version);

    // Edit: the second question replaced.
    const edited = await turn(id, { content: 'Edited question [e3]', replaceFrom: second!.id });
    expect(edited[0]).toMatchObject({ event: 'turn.started', data: { replaceFrom: second!.id } });
    expect(edited.at(-1)!.event).toBe('turn.completed');
    const [editRequest] = sentTo('Edited question [e3]');
    expect(editRequest).toContain('First question [e1]');
    expect(editRequest).not.toContain('Second question');
    expect(editRequest).not.toContain('Answer two.');
    const afterEdit = await view(id);
    expect(afterEdit.messages.map((m) => m.content)).toEqual([
      'First question [e1]',
      'Answer one.',
      'Edited question [e3]',
      'Answer three.',
    ]);

    // Regenerate over gRPC: the same content from the edited message; turn.started carries it.
    const client = conversationsClient(platform.grpcAddress);
    const frames: Array<{ event: string; turnStarted?: { replaceFrom?: string } }> = [];
    await new Promise<void>((resolve, reject) => {
      const stream = client.stream(keys.editor, {
        conversationId: id,
        content: 'Edited question [e3]',
        replaceFrom: afterEdit.messages[2]!.id,
      });
      stream.on('data', (frame: (typeof frames)[number]) => frames.push(frame));
      stream.on('end', resolve);
      stream.on('error', reject);
    });
    client.close();
    expect(frames[0]).toMatchObject({
      event: 'turn.started',
      turnStarted: { replaceFrom: afterEdit.messages[2]!.id },
    });
    expect(frames.at(-1)!.event).toBe('turn.completed');
    const regenerated = sentTo('Edited question [e3]').at(-1)!;
    expect(regenerated.split('Edited question [e3]')).toHaveLength(2);
    expect(regenerated).not.toContain('Answer three.');
    expect((await view(id)).messages.map((m) => m.content)).toEqual([
      'First question [e1]',
      'Answer one.',
      'Edited question [e3]',
      'Answer four.',
    ]);
    // The log keeps both branches: the feed still has every answer.
    const logged = await feed(
      id,
      (f) => f.event === 'message.completed' && (f.data as { text: string }).text === 'Answer four.',
    );
    expect(
      logged.filter((f) => f.event === 'message.completed').map((f) => (f.data as { text: string }).text),
    ).toEqual(['Answer one.', 'Answer two.', 'Answer three.', 'Answer four.']);
  });

  it('PATCHes title and metadata: in GET, on the stream, in the list filters (with paging); bad ones 400', async () => {
    const a = await create({ agentId: 'plain', metadata: { site: 'docs' } }, 'u-1');
    const b = await create({ agentId: 'plain', metadata: { site: 'blog' } }, 'u-2');
    const c = await create({ agentId: 'titled', metadata: { site: 'docs' } }, 'u-1');
    const patched = await call('PATCH', `/v1/conversations/${a}`, {
      title: 'Docs chat',
      metadata: { site: 'blog', lang: 'en' },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      id: a,
      title: 'Docs chat',
      metadata: { site: 'blog', lang: 'en' },
      userId: 'u-1',
    });
    const got = await view(a);
    expect(got).toMatchObject({ title: 'Docs chat', metadata: { site: 'blog', lang: 'en' } });
    const updated = await feed(a, (f) => f.event === 'conversation.updated');
    expect(updated.at(-1)!.data).toEqual({ title: 'Docs chat', metadata: { site: 'blog', lang: 'en' } });

    // Bad bodies: 400 naming the field, the version unmoved.
    await bad('PATCH', `/v1/conversations/${a}`, { title: '' }, 'title');
    await bad('PATCH', `/v1/conversations/${a}`, { title: 'x'.repeat(201) }, 'title');
    await bad('PATCH', `/v1/conversations/${a}`, {}, 'title');
    await bad('PATCH', `/v1/conversations/${a}`, { metadata: { 'bad key': 'x' } }, 'metadata');
    await bad('PATCH', `/v1/conversations/${a}`, { metadata: { site: 3 } }, 'metadata.site');
    await bad('PATCH', `/v1/conversations/${a}`, { colour: 'red' }, 'colour');
    expect((await view(a)).version).toBe(got.version);
    const asViewer = await platform.request('PATCH', `/v1/conversations/${a}`, keys.viewer, { title: 'v' });
    expect(asViewer.status).toBe(403);
    const asStranger = await platform.request('PATCH', `/v1/conversations/${a}`, strangerKey, { title: 's' });
    expect(asStranger.status).toBe(404);
    expect((await view(a)).version).toBe(got.version);

    const list = async (query: string): Promise<{ ids: string[]; next: string | null }> => {
      const answer = await call('GET', `/v1/conversations?${query}`);
      expect(answer.status).toBe(200);
      const body = answer.body as { data: Array<{ id: string }>; nextCursor: string | null };
      return { ids: body.data.map((d) => d.id), next: body.nextCursor };
    };
    // The index follows the PATCH (its consumer), so: eventually.
    await eventually(async () => expect((await list('metadata.site=blog')).ids).toEqual([b, a]));
    expect((await list('metadata.site=docs')).ids).toEqual([c]);
    expect((await list('metadata.site=blog&metadata.lang=en')).ids).toEqual([a]);
    expect((await list('agentId=titled')).ids).toEqual([c]);
    expect((await list('userId=u-2&metadata.site=blog')).ids).toEqual([b]);
    const first = await list('metadata.site=blog&limit=1');
    expect(first.ids).toEqual([b]);
    const second = await list(`metadata.site=blog&limit=1&cursor=${first.next!}`);
    expect(second).toEqual({ ids: [a], next: null });

    // Status follows the log: a failed turn lists under status=failed.
    platform.fake.on(lastUserMessageIncludes('[fail]'), fakeReply.error(400, 'bad request'));
    expect((await turn(b, { content: 'Break [fail]' })).at(-1)!.event).toBe('turn.failed');
    await eventually(async () => expect((await list('status=failed')).ids).toEqual([b]));
    expect((await list('status=idle&metadata.site=blog')).ids).toEqual([a]);

    // The same filters over gRPC (keel.conversations.v1 ListConversations), and userId on GetConversation.
    const client = conversationsClient(platform.grpcAddress);
    const listed = await client.unary('listConversations', keys.viewer, {
      status: ConversationStatus.FAILED,
      metadata: { site: 'blog' },
    });
    expect(listed.data.map((d) => [d.id, d.userId])).toEqual([[b, 'u-2']]);
    const fetched = await client.unary('getConversation', keys.viewer, { conversationId: a });
    expect(fetched.conversation).toMatchObject({ title: 'Docs chat', userId: 'u-1' });
    client.close();

    for (const [query, field] of [
      ['colour=red', 'colour'],
      ['status=done', 'status'],
      ['metadata.bad%20key=x', 'metadata.bad key'],
      ['limit=0', 'limit'],
    ]) {
      const answer = await call('GET', `/v1/conversations?${query}`);
      expect(answer.status).toBe(400);
      expect((answer.body as { detail: string }).detail).toContain(field);
    }
  });

  it('records feedback per message: the latest on it in GET, counted in usage by agent; bad ones 400/404', async () => {
    platform.fake.on(lastUserMessageIncludes('[f1]'), fakeReply.text('Rated answer.'));
    platform.fake.on(lastUserMessageIncludes('[f2]'), fakeReply.text('Another answer.'));
    const id = await create({ agentId: 'plain' });
    await turn(id, { content: 'Rate me [f1]' });
    await turn(id, { content: 'And me [f2]' });
    const answers = (await view(id)).messages.filter((m) => m.role === 'assistant');
    const rate = (messageId: string, body: unknown) =>
      call('POST', `/v1/conversations/${id}/messages/${messageId}/feedback`, body);
    expect(await rate(answers[0]!.id, { rating: 'up' })).toMatchObject({
      status: 200,
      body: { messageId: answers[0]!.id, rating: 'up' },
    });
    expect((await rate(answers[0]!.id, { rating: 'down', comment: 'Wrong price' })).status).toBe(200);
    expect((await rate(answers[1]!.id, { rating: 'up' })).status).toBe(200);
    const rated = await view(id);
    expect(rated.messages.filter((m) => m.role === 'assistant').map((m) => m.feedback)).toEqual([
      { rating: 'down', comment: 'Wrong price' },
      { rating: 'up' },
    ]);

    await bad(
      'POST',
      `/v1/conversations/${id}/messages/${answers[0]!.id}/feedback`,
      { rating: 'meh' },
      'rating',
    );
    await bad('POST', `/v1/conversations/${id}/messages/${answers[0]!.id}/feedback`, {}, 'rating');
    await bad(
      'POST',
      `/v1/conversations/${id}/messages/${answers[0]!.id}/feedback`,
      { rating: 'up', comment: 'x'.repeat(2001) },
      'comment',
    );
    expect((await rate('no-such-message', { rating: 'up' })).status).toBe(404);
    const feedbackPath = `/v1/conversations/${id}/messages/${answers[1]!.id}/feedback`;
    const down = { rating: 'down' };
    expect((await platform.request('POST', feedbackPath, keys.viewer, down)).status).toBe(403);
    expect((await platform.request('POST', feedbackPath, strangerKey, down)).status).toBe(404);
    expect((await view(id)).version).toBe(rated.version);

    await eventually(async () => {
      const usage = await call('GET', `/v1/usage?from=${today}&to=${today}&groupBy=agent`);
      expect(usage.status).toBe(200);
      const row = (usage.body as { rows: Array<Record<string, unknown>> }).rows.find(
        (r) => r.key === 'plain',
      );
      expect(row).toMatchObject({ feedbackUp: 1, feedbackDown: 1 });
    });
  });

  it('titles a conversation of an autoTitle agent once, after its first turn, with a priced model call', async () => {
    platform.fake.on(
      systemPromptIncludes('Write a short title'),
      fakeReply.text('"Refund for order 42"', { usage: { promptTokens: 31, completionTokens: 5 } }),
    );
    platform.fake.on(lastUserMessageIncludes('[t1]'), fakeReply.text('Sure, refunding.'));
    platform.fake.on(lastUserMessageIncludes('[t2]'), fakeReply.text('Done.'));
    const id = await create({ agentId: 'titled' });
    await turn(id, { content: 'I want a refund for order 42 [t1]' });
    const titled = await feed(id, (f) => f.event === 'conversation.updated');
    expect(titled.at(-1)!.data).toEqual({ title: 'Refund for order 42' });
    const usage = await feed(
      id,
      (f) => f.event === 'usage' && (f.data as { promptTokens: number }).promptTokens === 31,
    );
    expect((usage.at(-1)!.data as { costUsd: number }).costUsd).toBeGreaterThan(0);
    expect((await view(id)).title).toBe('Refund for order 42');

    await turn(id, { content: 'Thanks [t2]' });
    // One title call in all: the second turn's end asks for none.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const titleCalls = platform.fake.requests.filter((r) =>
      JSON.stringify(r.body?.messages ?? '').includes('Write a short title'),
    );
    expect(titleCalls).toHaveLength(1);
    const final = await view(id);
    expect(final.title).toBe('Refund for order 42');
    // Counted like any other call: in the conversation's usage and in the agent's usage row.
    expect(final.usage.promptTokens).toBeGreaterThanOrEqual(31);
    await eventually(async () => {
      const rows = (await call('GET', `/v1/usage?from=${today}&to=${today}&groupBy=agent`)).body as {
        rows: Array<{ key: string; promptTokens: number }>;
      };
      expect(rows.rows.find((r) => r.key === 'titled')?.promptTokens).toBe(final.usage.promptTokens);
    });
  });
});
