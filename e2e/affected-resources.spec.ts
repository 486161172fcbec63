// Affected resources end to end, with the gateway, agent and tools as processes on NATS and
// FerretDB and the fake OpenAI server as the model (API.md "Affected resources"): a tool declares
// `affects`; `turn.completed` carries `affected`, the union over the turn's successful tool calls
// only (a failing call's resources are left out); a bad `affects` is a 400 naming it.
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import { fakeReply, lastUserMessageIncludes } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { startGatewayPlatform } from './support/gateway-platform.js';
import { answerOf, openTurnStream } from './support/http.js';

describe('affected resources (gateway, agent, tools as processes)', () => {
  let platform: GatewayPlatform;
  let keys: Record<'admin' | 'editor', string>;
  let cms: Server;
  let cmsUrl: string;

  const putTool = (name: string, body: Record<string, unknown>) =>
    platform.request('PUT', `/v1/tools/${name}`, keys.admin, body).then(answerOf);
  const tool = (path: string, affects: unknown) => ({
    description: `CMS ${path}`,
    inputSchema: { type: 'object', properties: { id: { type: 'string' } } },
    kind: 'webhook',
    url: `${cmsUrl}/${path}`,
    affects,
  });

  beforeAll(async () => {
    // /save answers 200; /migrate answers 422 (a final tool error, not retried).
    cms = createServer((req, res) => {
      const ok = req.url === '/save';
      res.writeHead(ok ? 200 : 422, { 'content-type': 'application/json' });
      res.end(JSON.stringify(ok ? { saved: true } : { error: 'schema locked' }));
    });
    await new Promise<void>((resolve) => cms.listen(0, '127.0.0.1', resolve));
    cmsUrl = `http://127.0.0.1:${(cms.address() as { port: number }).port}`;
    platform = await startGatewayPlatform('affected');
    ({ keys } = await platform.tenantWithKeys('affected-a', ['admin', 'editor']));
    expect((await answerOf(await platform.request('POST', '/v1/webhook-secret', keys.admin))).status).toBe(
      201,
    );
  }, 180_000);

  afterAll(async () => {
    await platform?.stop();
    await new Promise<void>((resolve) => cms?.close(() => resolve()));
  });

  it("turn.completed names the successful call's affects, not the failing one's", async () => {
    const saved = await putTool('save_page', tool('save', ['pages', 'navigation', 'pages']));
    expect(saved.status).toBe(200);
    expect(saved.body).toMatchObject({ affects: ['pages', 'navigation'] });
    expect((await putTool('migrate_schema', tool('migrate', ['schema']))).status).toBe(200);
    const agent = await platform.request('PUT', '/v1/agents/cms', keys.admin, {
      model: 'openai:gpt-4o-mini',
      tools: ['save_page', 'migrate_schema'],
    });
    expect(agent.status).toBe(200);
    platform.fake.on(
      lastUserMessageIncludes('[aff-1]'),
      fakeReply.toolCalls([
        { name: 'save_page', arguments: { id: 'home' } },
        { name: 'migrate_schema', arguments: { id: 'v2' } },
      ]),
      fakeReply.text('Saved the page; the schema change failed.'),
    );
    platform.fake.on(lastUserMessageIncludes('[aff-2]'), fakeReply.text('Nothing to change.'));

    const created = await answerOf(
      await platform.request('POST', '/v1/conversations', keys.editor, { agentId: 'cms' }),
    );
    const { id } = created.body as { id: string };
    const turn = async (content: string) => {
      const stream = await openTurnStream(platform.base, keys.editor, id, { content });
      const frames = await stream.until(
        (f) => f.event === 'turn.completed' || f.event === 'turn.failed',
        30_000,
      );
      stream.close();
      return frames;
    };
    const frames = await turn('Save the home page and migrate the schema [aff-1]');
    const results = frames.filter((f) => f.event === 'tool.result').map((f) => f.data);
    expect(results).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'save_page', ok: true }),
        expect.objectContaining({ name: 'migrate_schema', ok: false }),
      ]),
    );
    expect(frames.at(-1)).toMatchObject({
      event: 'turn.completed',
      data: { finishReason: 'stop', affected: ['navigation', 'pages'] },
    });
    // A turn without tool calls affected nothing.
    expect((await turn('Anything else? [aff-2]')).at(-1)).toMatchObject({
      event: 'turn.completed',
      data: { affected: [] },
    });
  });

  it('refuses an affects that is not a short list of names, naming it', async () => {
    for (const affects of ['pages', ['a b'], Array.from({ length: 21 }, (_, i) => `r${i}`)]) {
      const refused = await putTool('bad_affects', tool('save', affects));
      expect(refused.status).toBe(400);
      expect((refused.body as { detail: string }).detail).toMatch(/^affects /);
    }
  });
});
