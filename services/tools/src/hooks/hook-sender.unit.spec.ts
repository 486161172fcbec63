import type { IncomingHttpHeaders, Server } from 'node:http';
import { createServer } from 'node:http';
import { EgressPolicy } from '@keel/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySignature } from '../execution/webhook-signature.js';
import { createHookSender } from './hook-sender.js';

let server: Server;
let base: string;
const received: Array<{ path: string; headers: IncomingHttpHeaders; body: string }> = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString() });
      if (req.url === '/data')
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":{"a":1}}');
      else if (req.url === '/text') res.writeHead(204).end();
      else if (req.url === '/moved') res.writeHead(302, { location: '/data' }).end();
      else res.writeHead(503).end('busy');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

// The test server is on loopback: opened on purpose, as KEEL_EGRESS_ALLOW would.
const open = createHookSender({ egress: EgressPolicy.fromAllowList('127.0.0.0/8'), timeoutMs: 2_000 });
const send = { eventId: '0192f1c2-0000-7000-8000-000000000009', event: 'turn.completed', body: '{"x":1}' };

describe('the hook sender', () => {
  it('POSTs the body signed with the secret, the event id as Idempotency-Key, and reads a JSON answer', async () => {
    const answer = await open({ ...send, url: `${base}/data`, secret: 'whsec_hooks' });
    expect(answer).toEqual({ ok: true, body: { data: { a: 1 } } });
    const { headers, body } = received.at(-1)!;
    expect(body).toBe('{"x":1}');
    expect(headers['idempotency-key']).toBe(send.eventId);
    expect(headers['x-keel-event']).toBe('turn.completed');
    expect(verifySignature('whsec_hooks', body, headers['x-keel-signature'] as string)).toBe(true);
  });

  it('sends unsigned without a secret; a 2xx without JSON is still a success', async () => {
    expect(await open({ ...send, url: `${base}/text` })).toEqual({ ok: true });
    expect(received.at(-1)!.headers['x-keel-signature']).toBeUndefined();
  });

  it('a non-2xx answer and a redirect (not followed) are failed attempts', async () => {
    expect(await open({ ...send, url: `${base}/down` })).toEqual({
      ok: false,
      error: 'the hook answered 503: busy',
    });
    const moved = await open({ ...send, url: `${base}/moved` });
    expect(moved).toMatchObject({ ok: false, error: expect.stringContaining('302') });
    expect(received.filter((r) => r.path === '/data')).toHaveLength(1);
  });

  it('refuses at send time an address the egress policy does not open, after resolution', async () => {
    const closed = createHookSender({ egress: new EgressPolicy(), timeoutMs: 2_000 });
    const before = received.length;
    const answer = await closed({ ...send, url: `http://localhost:${new URL(base).port}/data` });
    expect(answer).toMatchObject({
      ok: false,
      error: expect.stringMatching(/egress to localhost is refused/),
    });
    expect(received).toHaveLength(before);
  });
});
