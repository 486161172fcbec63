// The context policy end to end, with the gateway, agent and tools as processes on NATS and
// FerretDB, the fake OpenAI server as the model and a webhook tool returning ~3,000 characters a
// call: a 40-step turn whose every prompt stays under maxContextTokens (older results stubbed)
// while the conversation's log holds every result in full (API.md "Context policy").
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import { fakeReply, lastUserMessageIncludes } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { startGatewayPlatform } from './support/gateway-platform.js';
import { answerOf, openTurnStream } from './support/http.js';

const STEPS = 40;
const MAX_CONTEXT_TOKENS = 6_000;

describe('context policy (gateway, agent, tools as processes)', () => {
  let platform: GatewayPlatform;
  let keys: Record<'admin' | 'editor', string>;
  let tool: Server;
  let toolUrl: string;

  beforeAll(async () => {
    // A search tool whose every result is ~3,000 characters, numbered by the call's query.
    tool = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const { args } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { args: { q: string } };
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ query: args.q, text: `result of ${args.q}: ${'x'.repeat(3_000)}` }));
      });
    });
    await new Promise<void>((resolve) => tool.listen(0, '127.0.0.1', resolve));
    toolUrl = `http://127.0.0.1:${(tool.address() as { port: number }).port}/search`;
    platform = await startGatewayPlatform('ctxpolicy');
    ({ keys } = await platform.tenantWithKeys('ctxpolicy-a', ['admin', 'editor']));
  }, 180_000);

  afterAll(async () => {
    await platform?.stop();
    await new Promise<void>((resolve) => tool?.close(() => resolve()));
  });

  it(`runs a ${STEPS}-step tool-heavy turn with every prompt under maxContextTokens and every result in the log`, async () => {
    const { admin, editor } = keys;
    const put = (path: string, body: unknown) => platform.request('PUT', path, admin, body).then(answerOf);
    expect((await answerOf(await platform.request('POST', '/v1/webhook-secret', admin))).status).toBe(201);
    const search = await put('/v1/tools/search', {
      description: 'Search pages',
      inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
      kind: 'webhook',
      url: toolUrl,
      approval: 'never',
    });
    expect(search.status).toBe(200);
    const agent = await put('/v1/agents/researcher', {
      model: 'openai:gpt-4o-mini',
      tools: ['search'],
      maxSteps: STEPS + 1,
      context: { maxContextTokens: MAX_CONTEXT_TOKENS, keepToolResults: 2 },
    });
    expect(agent.status).toBe(200);
    const calls = Array.from({ length: STEPS }, (_, i) =>
      fakeReply.toolCalls([{ id: `call_${i + 1}`, name: 'search', arguments: { q: `q${i + 1}` } }]),
    );
    platform.fake.on(lastUserMessageIncludes('[ctx-40]'), ...calls, fakeReply.text('Summarised.'));

    const created = await answerOf(
      await platform.request('POST', '/v1/conversations', editor, { agentId: 'researcher' }),
    );
    const { id } = created.body as { id: string };
    const stream = await openTurnStream(platform.base, editor, id, { content: 'Research [ctx-40]' });
    const frames = await stream.until(
      (f) => f.event === 'turn.completed' || f.event === 'turn.failed',
      170_000,
    );
    stream.close();
    expect(frames.at(-1)).toMatchObject({ event: 'turn.completed' });

    // What the provider received: every prompt within the budget (4 characters a token, as the policy estimates).
    const prompts = platform.fake.requests.filter((r) =>
      JSON.stringify(r.body?.messages ?? []).includes('[ctx-40]'),
    );
    expect(prompts).toHaveLength(STEPS + 1);
    const promptChars = prompts.map((r) =>
      (r.body?.messages ?? []).reduce((sum, m) => sum + JSON.stringify(m.content ?? '').length, 0),
    );
    for (const chars of promptChars) expect(chars / 4).toBeLessThan(MAX_CONTEXT_TOKENS);
    const last = prompts.at(-1)!.body!.messages.filter((m) => m.role === 'tool');
    expect(last).toHaveLength(STEPS);
    expect(last.filter((m) => String(m.content).includes('left out of the prompt'))).toHaveLength(STEPS - 2);
    expect(String(last[0]!.content)).toMatch(
      /^\[tool result of search \(call [^)]+\) left out of the prompt: \d+ characters/,
    );

    // What the log keeps: every result in full.
    const state = await answerOf(await platform.request('GET', `/v1/conversations/${id}`, editor));
    const results = (state.body as { messages: Array<{ role: string; content: string }> }).messages.filter(
      (m) => m.role === 'tool',
    );
    expect(results).toHaveLength(STEPS);
    for (const [i, result] of results.entries()) {
      expect(result.content).toContain(`result of q${i + 1}:`);
      expect(result.content.length).toBeGreaterThan(3_000);
    }
  }, 200_000);
});
