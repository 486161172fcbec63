// A webhook tool server for end-to-end tests: checks Keel's signature, applies each request's effect
// once per Idempotency-Key (as a well-behaved webhook does), and can hold requests to let a test
// kill a process while a call is in flight.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import { createServer } from 'node:http';

/** One request the webhook received. */
export interface WebhookHit {
  key: string;
  body: { toolCallId: string; conversationId: string; tenantId: string; args: Record<string, unknown> };
  signatureValid: boolean;
}

export const startWebhookServer = async () => {
  let secret = '';
  const hits: WebhookHit[] = [];
  const effects = new Map<string, number>();
  let holdMs = 0;
  const read = async (req: IncomingMessage): Promise<string> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  };
  const server: Server = createServer((req, res) => {
    void (async () => {
      const raw = await read(req);
      const key = String(req.headers['idempotency-key'] ?? '');
      const expected = `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`;
      const given = String(req.headers['x-keel-signature'] ?? '');
      const signatureValid =
        given.length === expected.length && timingSafeEqual(Buffer.from(given), Buffer.from(expected));
      const body = JSON.parse(raw) as WebhookHit['body'];
      hits.push({ key, body, signatureValid });
      // Misbehaviours on request, chosen by the order id the model asked about.
      const id = String(body.args.id ?? '');
      if (id.startsWith('fail')) {
        res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"database down"}');
        return;
      }
      if (id.startsWith('text')) {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('all good, but not JSON');
        return;
      }
      if (id.startsWith('slow')) await new Promise((r) => setTimeout(r, 3_000));
      if (holdMs > 0) await new Promise((r) => setTimeout(r, holdMs));
      if (!effects.has(key)) effects.set(key, (effects.get(key) ?? 0) + 1); // the effect, once per key
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          order: body.args.id ?? null,
          status: 'shipped',
          refunded: body.args.amount ?? null,
        }),
      );
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/tool`,
    hits,
    effects,
    setSecret: (value: string) => void (secret = value),
    hold: (ms: number) => void (holdMs = ms),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
};

/** A running webhook server. */
export type WebhookServer = Awaited<ReturnType<typeof startWebhookServer>>;
