// Hooks end to end (API.md "Tool sources and policies", Hooks), with the gateway, agent and tools
// service as processes on NATS and FerretDB and the fake OpenAI server as the model: a hook gets
// every turn.completed once and in order (by Idempotency-Key) across a SIGKILL and restart of the
// tools service, signed with the tenant's webhook secret; its `{ data }` answers reach the
// conversation's stream once per event; a failing hook is dead-lettered and listed at /failures;
// bad PUTs are 400s naming the field.
import { createHmac } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import { createServer } from 'node:http';
import { eventually, fakeReply, lastUserMessageIncludes, openSse } from '@keel/testkit';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { startGatewayPlatform } from './support/gateway-platform.js';
import { answerOf, openTurnStream } from './support/http.js';
import { startTools } from './support/platform.js';

/** One POST a hook received. */
interface HookHit {
  path: string;
  key: string;
  event: string;
  signature: string;
  raw: string;
  receivedAt: number;
  body: { eventId: string; event: string; conversationId: string; version: number };
}

const read = async (req: IncomingMessage): Promise<string> => {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
};

/**
 * The receiver: `/ok` answers `{ data: { title } }` (after `holdMs`, to let a test kill the sender
 * mid-delivery), `/fail` answers 500 until `recover`.
 */
const startReceiver = async () => {
  const hits: HookHit[] = [];
  let holdMs = 0;
  let failing = true;
  const server: Server = createServer((req, res) => {
    void (async () => {
      const raw = await read(req);
      const body = JSON.parse(raw) as HookHit['body'];
      const hit: HookHit = {
        path: req.url ?? '',
        key: String(req.headers['idempotency-key'] ?? ''),
        event: String(req.headers['x-keel-event'] ?? ''),
        signature: String(req.headers['x-keel-signature'] ?? ''),
        raw,
        receivedAt: performance.now(),
        body,
      };
      hits.push(hit);
      if (hit.path === '/fail' && failing) {
        res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"down"}');
        return;
      }
      if (holdMs > 0) await new Promise((r) => setTimeout(r, holdMs));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ data: { title: `after v${body.version}` } }));
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    hold: (ms: number) => void (holdMs = ms),
    recover: () => void (failing = false),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
};

describe('hooks (gateway, agent, tools as processes)', () => {
  let platform: GatewayPlatform;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let keys: Record<'admin' | 'editor', string>;
  let secret: string;

  const putHook = (name: string, body: unknown) =>
    platform.request('PUT', `/v1/hooks/${name}`, keys.admin, body).then(answerOf);
  const turn = async (conversationId: string, tag: string) => {
    platform.fake.on(lastUserMessageIncludes(tag), fakeReply.text(`Noted ${tag}.`));
    const stream = await openTurnStream(platform.base, keys.editor, conversationId, { content: `Hi ${tag}` });
    const frames = await stream.until(
      (f) => f.event === 'turn.completed' || f.event === 'turn.failed',
      30_000,
    );
    stream.close();
    expect(frames.at(-1)?.event).toBe('turn.completed');
    return performance.now();
  };
  const newConversation = async () => {
    const created = await answerOf(
      await platform.request('POST', '/v1/conversations', keys.editor, { agentId: 'chat' }),
    );
    return (created.body as { id: string }).id;
  };

  beforeAll(async () => {
    receiver = await startReceiver();
    platform = await startGatewayPlatform('hooks', {
      // Short retries and leases: three attempts 100 ms and 200 ms apart; a killed process's lanes free after 1.5 s.
      env: { KEEL_HOOKS_BACKOFF_MS: '100,200', KEEL_HOOKS_LEASE_MS: '1500', KEEL_HOOKS_POLL_MS: '100' },
    });
    ({ keys } = await platform.tenantWithKeys('hooks-a', ['admin', 'editor']));
    const rotated = await answerOf(await platform.request('POST', '/v1/webhook-secret', keys.admin));
    ({ secret } = rotated.body as { secret: string });
    const agent = await platform.request('PUT', '/v1/agents/chat', keys.admin, {
      model: 'openai:gpt-4o-mini',
      tools: [],
    });
    expect(agent.status).toBe(200);
    const provider = await platform.request('PUT', '/v1/providers/openai', keys.admin, {
      baseUrl: platform.fake.url,
      apiKey: 'sk-tenant-e2e',
    });
    expect(provider.status).toBe(200);
  }, 180_000);

  afterAll(async () => {
    await platform?.stop();
    await receiver?.close();
  });

  it('delivers every turn.completed once and in order across a SIGKILL of the tools service, signed, its data reaching the stream', async () => {
    const put = await putHook('audit', { url: `${receiver.url}/ok`, events: ['turn.completed'] });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ name: 'audit', url: `${receiver.url}/ok`, events: ['turn.completed'] });
    const listed = await answerOf(await platform.request('GET', '/v1/hooks', keys.admin));
    expect(listed.body).toEqual({ data: [put.body] });

    const id = await newConversation();
    const completedAt = [await turn(id, '[hk-1]'), await turn(id, '[hk-2]')];
    // The third delivery is held by the receiver while the tools service is SIGKILLed.
    receiver.hold(4_000);
    await turn(id, '[hk-3]');
    await eventually(() => expect(new Set(receiver.hits.map((h) => h.key)).size).toBe(3), {
      timeoutMs: 15_000,
    });
    await platform.processes[1]!.kill('SIGKILL');
    receiver.hold(0);
    await turn(id, '[hk-4]');
    platform.processes[1] = await startTools(platform.env);
    await turn(id, '[hk-5]');

    const ok = () => receiver.hits.filter((h) => h.path === '/ok');
    await eventually(() => expect(new Set(ok().map((h) => h.key)).size).toBe(5), { timeoutMs: 30_000 });
    // Every copy of one event carries the same key and body; deduplicated, the versions rise.
    const firstByKey = new Map<string, HookHit>();
    for (const hit of ok()) {
      const first = firstByKey.get(hit.key);
      if (first) expect(hit.raw).toBe(first.raw);
      else firstByKey.set(hit.key, hit);
    }
    const deduped = [...firstByKey.values()];
    expect(deduped.map((h) => h.body.eventId)).toEqual(deduped.map((h) => h.key));
    expect(deduped.every((h) => h.event === 'turn.completed' && h.body.conversationId === id)).toBe(true);
    const versions = deduped.map((h) => h.body.version);
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
    // Signed like a webhook tool call: HMAC-SHA256 of the exact body under the tenant's webhook secret.
    for (const hit of ok()) {
      expect(hit.signature).toBe(`sha256=${createHmac('sha256', secret).update(hit.raw).digest('hex')}`);
    }
    // From the client seeing turn.completed to the hook receiving it (the first two turns).
    const latency = completedAt.map((at, i) => Math.round(deduped[i]!.receivedAt - at));
    console.info(
      `hooks e2e: ${ok().length} POSTs for 5 events (${ok().length - 5} redelivered after the SIGKILL); ` +
        `turn.completed seen by the client -> by the hook: ${latency.join(' ms, ')} ms`,
    );

    // The stream: the five turn.completed, in the hook's order, and one `data` per event though some were sent twice.
    const feed = await openSse(`${platform.base}/v1/conversations/${id}/events`, {
      headers: { authorization: `Bearer ${keys.editor}` },
    });
    const frames = await eventually(
      () => {
        const data = feed.events().filter((f) => f.event === 'data');
        expect(data).toHaveLength(5);
        return feed.events();
      },
      { timeoutMs: 15_000 },
    );
    feed.close();
    const completed = frames.filter((f) => f.event === 'turn.completed').map((f) => Number(f.id));
    expect(completed).toEqual(versions);
    expect(frames.filter((f) => f.event === 'data').map((f) => f.data)).toEqual(
      versions.map((v) => ({ hook: 'audit', data: { title: `after v${v}` } })),
    );
  }, 120_000);

  it('dead-letters a failing hook after its last attempt and lists it at /failures', async () => {
    expect(
      (await putHook('broken', { url: `${receiver.url}/fail`, events: ['turn.completed'] })).status,
    ).toBe(200);
    const id = await newConversation();
    await turn(id, '[hk-fail]');
    const failures = await eventually(
      async () => {
        const listed = await answerOf(await platform.request('GET', '/v1/hooks/broken/failures', keys.admin));
        expect(listed.status).toBe(200);
        const { data } = listed.body as { data: Array<Record<string, unknown>> };
        expect(data).toHaveLength(1);
        return data;
      },
      { timeoutMs: 20_000 },
    );
    const sent = receiver.hits.filter((h) => h.path === '/fail');
    expect(sent).toHaveLength(3);
    expect(new Set(sent.map((h) => h.key)).size).toBe(1);
    expect(failures[0]).toMatchObject({
      eventId: sent[0]!.key,
      event: 'turn.completed',
      conversationId: id,
      attempts: 3,
      error: expect.stringContaining('500'),
    });
    // The operator's dead letters list it too (consumer hooks); a replay once the hook is back
    // sends it once more under the same key, and it leaves the failures.
    const letters = await answerOf(
      await platform.request('GET', '/v1/dead-letters?consumer=hooks', keys.admin),
    );
    expect((letters.body as { data: Array<{ id: string }> }).data.map((l) => l.id)).toEqual([
      failures[0]!.id,
    ]);
    // Stored sealed as on the bus (the dead-lettered event's content under its conversation's key).
    const mongo = await MongoClient.connect(platform.env.MONGODB_URL!);
    try {
      const stored = await mongo
        .db()
        .collection('bus_dead_letters')
        .findOne({ _id: failures[0]!.id as never });
      const event = JSON.parse(String(stored?.event)) as { data: object };
      expect(Object.keys(event.data)).toContain('__sealed');
    } finally {
      await mongo.close();
    }
    receiver.recover();
    const replay = await platform.request(
      'POST',
      `/v1/dead-letters/${String(failures[0]!.id)}/replay`,
      platform.operatorKey,
    );
    expect(replay.status).toBe(202);
    await eventually(() => expect(receiver.hits.filter((h) => h.path === '/fail')).toHaveLength(4), {
      timeoutMs: 15_000,
    });
    expect(receiver.hits.at(-1)?.key).toBe(sent[0]!.key);
    // Replayed opened: the same body as the first attempts.
    expect(receiver.hits.at(-1)?.body).toEqual(sent[0]!.body);
    await eventually(async () => {
      const listed = await answerOf(await platform.request('GET', '/v1/hooks/broken/failures', keys.admin));
      expect(listed.body).toEqual({ data: [] });
    });
    expect((await platform.request('DELETE', '/v1/hooks/broken', keys.admin)).status).toBe(204);
    expect((await platform.request('GET', '/v1/hooks/broken/failures', keys.admin)).status).toBe(404);
  }, 60_000);

  it('refuses an unknown event, a URL that is not one and a URL the egress guard refuses, naming the field', async () => {
    const cases: Array<[unknown, string, RegExp]> = [
      [
        { url: `${receiver.url}/ok`, events: ['turn.completed', 'turn.exploded'] },
        'events',
        /turn\.exploded/,
      ],
      [{ url: 'not a url', events: ['turn.completed'] }, 'url', /url/],
      [{ url: 'http://169.254.169.254/latest', events: ['turn.completed'] }, 'url', /url/],
      [{ url: `${receiver.url}/ok`, events: [] }, 'events', /events/],
    ];
    for (const [body, field, detail] of cases) {
      const refused = await putHook('bad', body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.contentType).toContain('application/problem+json');
      expect((refused.body as { detail: string }).detail).toMatch(detail);
      expect(JSON.stringify(refused.body)).toContain(field);
    }
    const listed = await answerOf(await platform.request('GET', '/v1/hooks', keys.admin));
    expect((listed.body as { data: Array<{ name: string }> }).data.map((h) => h.name)).not.toContain('bad');
    // Another tenant sees none of them; an editor may not configure hooks.
    const other = await platform.tenantWithKeys('hooks-b', ['admin']);
    expect((await answerOf(await platform.request('GET', '/v1/hooks', other.keys.admin))).body).toEqual({
      data: [],
    });
    expect((await platform.request('GET', '/v1/hooks/audit/failures', other.keys.admin)).status).toBe(404);
    expect((await platform.request('DELETE', '/v1/hooks/audit', other.keys.admin)).status).toBe(404);
    const byEditor = await platform.request('PUT', '/v1/hooks/audit', keys.editor, {
      url: `${receiver.url}/ok`,
      events: ['turn.completed'],
    });
    expect(byEditor.status).toBe(403);
  });
});
