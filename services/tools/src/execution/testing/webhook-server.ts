import { createServer } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifySignature } from '../webhook-signature.js';

/** One request the test webhook received. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The exact body bytes, as text. */
  body: string;
  idempotencyKey: string;
  /** `verifySignature(secret, body, X-Keel-Signature)`. */
  signatureValid: boolean;
  /** How many requests with this Idempotency-Key arrived, this one included. */
  nthForKey: number;
  /** `performance.now()` when the body was complete. */
  at: number;
  /** Resolves when the client's side of this request goes away (answered or aborted). */
  closed: Promise<void>;
  /** True once the client closed before the response was finished. */
  abortedByClient: () => boolean;
}

/** How the test webhook answers: a response, or `hang` (headers never sent), or headers then a stalled body. */
export type Reply =
  | { status: number; body?: string | Buffer; headers?: Record<string, string> }
  | { hang: 'before-headers' | 'after-headers'; status?: number }
  | { chunks: string[]; chunkDelayMs: number; status?: number };

/** A real HTTP server on 127.0.0.1 standing in for a tenant's webhook. */
export interface TestWebhook {
  url: string;
  requests: ReceivedRequest[];
  countFor(key: string): number;
  /** Sets how later requests are answered (default: 200 `{"ok":true}`). */
  reply(handler: (request: ReceivedRequest) => Reply): void;
  close(): Promise<void>;
}

/** Starts a webhook that verifies signatures with `secret` and counts requests per Idempotency-Key. */
export const startTestWebhook = async (secret: string): Promise<TestWebhook> => {
  const requests: ReceivedRequest[] = [];
  const perKey = new Map<string, number>();
  let handler: (request: ReceivedRequest) => Reply = () => ({ status: 200, body: '{"ok":true}' });

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    let aborted = false;
    const closed = new Promise<void>((resolve) => {
      res.on('close', () => {
        if (!res.writableFinished) aborted = true;
        resolve();
      });
    });
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const idempotencyKey = String(req.headers['idempotency-key'] ?? '');
      const nthForKey = (perKey.get(idempotencyKey) ?? 0) + 1;
      perKey.set(idempotencyKey, nthForKey);
      const received: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body,
        idempotencyKey,
        signatureValid: verifySignature(secret, body, req.headers['x-keel-signature'] as string | undefined),
        nthForKey,
        at: performance.now(),
        closed,
        abortedByClient: () => aborted,
      };
      requests.push(received);
      answer(res, handler(received));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/hook`,
    requests,
    countFor: (key) => perKey.get(key) ?? 0,
    reply: (next) => {
      handler = next;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};

const answer = (res: ServerResponse, reply: Reply): void => {
  if ('hang' in reply) {
    if (reply.hang === 'after-headers') {
      res.writeHead(reply.status ?? 200, { 'content-type': 'application/json' });
      res.write('{"partial":');
    }
    return;
  }
  if ('chunks' in reply) {
    res.writeHead(reply.status ?? 200, { 'content-type': 'application/json' });
    const [first, ...rest] = reply.chunks;
    res.write(first ?? '');
    const timer = setInterval(() => {
      const next = rest.shift();
      if (next === undefined || res.destroyed) {
        clearInterval(timer);
        res.end();
        return;
      }
      res.write(next);
    }, reply.chunkDelayMs);
    return;
  }
  res.writeHead(reply.status, reply.headers ?? { 'content-type': 'application/json' });
  res.end(reply.body ?? '');
};
