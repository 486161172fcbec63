// Working memory end to end, with the gateway, agent and tools as processes on NATS and FerretDB
// and the fake OpenAI server as the model (API.md "Working memory"): an entity one turn's tool
// result names (by the tool's memory JSONPaths) is in the next turn's prompt under "Known
// entities"; a memory declaration with a JSONPath Keel cannot follow is a 400 naming it.
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import { fakeReply, lastUserMessageIncludes } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { startGatewayPlatform } from './support/gateway-platform.js';
import { answerOf, openTurnStream } from './support/http.js';

describe('working memory (gateway, agent, tools as processes)', () => {
  let platform: GatewayPlatform;
  let keys: Record<'admin' | 'editor', string>;
  let pages: Server;
  let pagesUrl: string;

  const putTool = (body: Record<string, unknown>) =>
    platform.request('PUT', '/v1/tools/get_page', keys.admin, body).then(answerOf);
  const tool = {
    description: 'Read a page',
    inputSchema: { type: 'object', properties: { slug: { type: 'string' } } },
    kind: 'webhook',
    approval: 'never',
  };

  beforeAll(async () => {
    pages = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'p-42', title: 'Pricing page', body: 'Our prices.' }));
    });
    await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
    pagesUrl = `http://127.0.0.1:${(pages.address() as { port: number }).port}/page`;
    platform = await startGatewayPlatform('workmem');
    ({ keys } = await platform.tenantWithKeys('workmem-a', ['admin', 'editor']));
    expect((await answerOf(await platform.request('POST', '/v1/webhook-secret', keys.admin))).status).toBe(
      201,
    );
  }, 180_000);

  afterAll(async () => {
    await platform?.stop();
    await new Promise<void>((resolve) => pages?.close(() => resolve()));
  });

  it("names an entity from one turn's tool result in the next turn's prompt", async () => {
    const memory = [{ type: 'page', id: '$.id', label: '$.title' }];
    const stored = await putTool({ ...tool, url: pagesUrl, memory });
    expect(stored.status).toBe(200);
    expect(stored.body).toMatchObject({ memory });
    const agent = await platform.request('PUT', '/v1/agents/editor', keys.admin, {
      model: 'openai:gpt-4o-mini',
      tools: ['get_page'],
    });
    expect(agent.status).toBe(200);
    platform.fake.on(
      lastUserMessageIncludes('[wm-1]'),
      fakeReply.toolCalls([{ name: 'get_page', arguments: { slug: 'pricing' } }]),
      fakeReply.text('Found the pricing page.'),
    );
    platform.fake.on(lastUserMessageIncludes('[wm-2]'), fakeReply.text('Updated it.'));

    const created = await answerOf(
      await platform.request('POST', '/v1/conversations', keys.editor, { agentId: 'editor' }),
    );
    const { id } = created.body as { id: string };
    let usages: unknown[] = [];
    for (const content of ['Find the pricing page [wm-1]', 'Now update that page [wm-2]']) {
      const stream = await openTurnStream(platform.base, keys.editor, id, { content });
      const frames = await stream.until(
        (f) => f.event === 'turn.completed' || f.event === 'turn.failed',
        30_000,
      );
      stream.close();
      expect(frames.at(-1)!.event).toBe('turn.completed');
      usages = frames.filter((f) => f.event === 'usage').map((f) => f.data);
    }
    const systemOf = (marker: string): string[] =>
      platform.fake.requests
        .filter((r) => JSON.stringify(r.body?.messages ?? '').includes(marker))
        .map((r) => String(r.body!.messages[0]!.content));
    const [beforeTool] = systemOf('[wm-1]');
    expect(beforeTool).not.toContain('# Known entities');
    const nextTurn = systemOf('[wm-2]');
    expect(nextTurn).toHaveLength(1);
    expect(nextTurn[0]).toContain('# Known entities');
    expect(nextTurn[0]).toContain('- page p-42: Pricing page');
    // GET shows the working memory and the prompt fill of the last model call.
    const view = await answerOf(await platform.request('GET', `/v1/conversations/${id}`, keys.editor));
    expect(view.status).toBe(200);
    const { entities, contextTokens } = view.body as { entities: unknown; contextTokens: number };
    expect(entities).toEqual([{ type: 'page', id: 'p-42', label: 'Pricing page' }]);
    const lastPrompt = (usages.at(-1) as { promptTokens: number }).promptTokens;
    expect(lastPrompt).toBeGreaterThan(0);
    expect(contextTokens).toBe(lastPrompt);
  });

  it('narrows the offered tools to the intent a message matches and adds its guidance; no match: all tools', async () => {
    const put = (body: unknown) =>
      platform.request('PUT', '/v1/agents/router', keys.admin, body).then(answerOf);
    const intents = [
      { name: 'read_content', keywords: ['show'], tools: ['get_page'], guidance: 'Read the page first.' },
    ];
    expect(
      (await put({ model: 'openai:gpt-4o-mini', tools: ['get_page', 'calculator'], intents })).status,
    ).toBe(200);
    const bad = await put({ model: 'openai:gpt-4o-mini', tools: ['calculator'], intents });
    expect(bad.status).toBe(400);
    expect((bad.body as { detail: string }).detail).toMatch(/intents\[0\]\.tools\[0\]/);
    platform.fake.on(lastUserMessageIncludes('[int-1]'), fakeReply.text('Here it is.'));
    platform.fake.on(lastUserMessageIncludes('[int-2]'), fakeReply.text('Four.'));
    const started: unknown[] = [];
    for (const content of ['Show me the pricing page [int-1]', 'What is 2 + 2 [int-2]']) {
      const created = await answerOf(
        await platform.request('POST', '/v1/conversations', keys.editor, { agentId: 'router' }),
      );
      const { id } = created.body as { id: string };
      const stream = await openTurnStream(platform.base, keys.editor, id, { content });
      const frames = await stream.until(
        (f) => f.event === 'turn.completed' || f.event === 'turn.failed',
        30_000,
      );
      stream.close();
      expect(frames.at(-1)!.event).toBe('turn.completed');
      started.push(frames.find((f) => f.event === 'turn.started')?.data);
    }
    // turn.started names the matched intent and its confidence; without a match it names none.
    expect(started[0]).toEqual({ turnId: expect.any(String), intent: 'read_content', confidence: 1 });
    expect(started[1]).toEqual({ turnId: expect.any(String) });
    const request = (marker: string) =>
      platform.fake.requests.find((r) => JSON.stringify(r.body?.messages ?? '').includes(marker))!.body!;
    const narrowed = request('[int-1]');
    expect(narrowed.tools?.map((t) => t.function.name)).toEqual(['get_page']);
    expect(String(narrowed.messages[0]!.content)).toContain(
      '# Intent\nread_content (confidence 1): Read the page first.',
    );
    const all = request('[int-2]');
    expect(all.tools?.map((t) => t.function.name).sort()).toEqual(['calculator', 'get_page']);
    expect(String(all.messages[0]!.content)).not.toContain('# Intent');
  });

  it('refuses a memory declaration it cannot follow, naming the field, and stores nothing', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [[{ type: 'page', id: 'id' }], /memory\[0\]\.id/],
      [[{ type: 'page', id: '$.id', label: '$..title' }], /memory\[0\]\.label/],
      [[{ id: '$.id' }], /memory\[0\]\.type/],
      ['$.id', /memory/],
    ];
    for (const [memory, field] of cases) {
      const answer = await platform
        .request('PUT', '/v1/tools/bad_tool', keys.admin, { ...tool, url: pagesUrl, memory })
        .then(answerOf);
      expect(answer.status, JSON.stringify(memory)).toBe(400);
      expect((answer.body as { detail: string }).detail).toMatch(field);
    }
    const listed = await answerOf(await platform.request('GET', '/v1/tools', keys.admin));
    expect(JSON.stringify(listed.body)).not.toContain('bad_tool');
  });
});
