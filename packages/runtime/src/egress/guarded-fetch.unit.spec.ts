// The call-time guard on real sockets: the host is resolved once per connection, refused if any
// address is refused, and the socket goes to the address that was checked — a name that rebinds
// between two lookups cannot slip a loopback connection in. Redirects come back unfollowed.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { createSecureContext } from 'node:tls';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EgressPolicy } from './egress-policy.js';
import type { EgressResolver } from './guarded-fetch.js';
import { EgressDeniedError, createEgressFetch } from './guarded-fetch.js';

interface Seen {
  host: string | undefined;
  authorization: string | undefined;
}

/** An HTTP server on `address` that records every request and closes each connection. */
const listen = async (address: string, port = 0, redirectTo?: string) => {
  const seen: Seen[] = [];
  const server: Server = createServer((request, response) => {
    seen.push({ host: request.headers.host, authorization: request.headers.authorization });
    request.resume();
    if (redirectTo) {
      response.writeHead(302, { location: redirectTo, connection: 'close' }).end();
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json', connection: 'close' });
    response.end(JSON.stringify({ at: address }));
  });
  await new Promise<void>((resolve) => server.listen(port, address, resolve));
  return { server, seen, port: (server.address() as AddressInfo).port };
};

const refusal = async (promise: Promise<unknown>): Promise<EgressDeniedError> => {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(EgressDeniedError);
    return error as EgressDeniedError;
  }
  throw new Error('the call was not refused');
};

describe('the egress fetch', () => {
  // Two servers on one port: 127.0.0.2 (opened on purpose) and 127.0.0.1 (never to be reached).
  let opened: Awaited<ReturnType<typeof listen>>;
  let forbidden: Awaited<ReturnType<typeof listen>>;
  beforeAll(async () => {
    opened = await listen('127.0.0.2');
    forbidden = await listen('127.0.0.1', opened.port);
  });
  afterAll(() => {
    opened.server.close();
    forbidden.server.close();
  });

  it('connects to the address it checked, and a rebinding name cannot switch to loopback', async () => {
    const answers = [['127.0.0.2'], ['127.0.0.1'], ['127.0.0.2']];
    const lookups: string[] = [];
    const resolve: EgressResolver = async (host) => {
      lookups.push(host);
      return (answers.shift() ?? []).map((address) => ({ address, family: 4 }));
    };
    const guarded = createEgressFetch({ policy: EgressPolicy.fromAllowList('127.0.0.2/32'), resolve });
    const url = `http://rebind.invalid:${opened.port}/hook`;

    // `rebind.invalid` has no address in any real resolver: reaching 127.0.0.2 proves the socket
    // used the checked answer and nothing resolved the name a second time.
    const first = await guarded(url, { method: 'POST', body: '{}' });
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ at: '127.0.0.2' });
    expect(opened.seen).toEqual([{ host: `rebind.invalid:${opened.port}`, authorization: undefined }]);

    // The server closed the connection: the next call connects again, and the name now says loopback.
    const denied = await refusal(guarded(url, { headers: { authorization: 'Bearer sk-platform' } }));
    expect(denied.message).toBe(
      'egress to rebind.invalid is refused: it resolves to an address that is not public',
    );
    expect(denied.code).toBe('PERMISSION_DENIED');
    expect(forbidden.seen).toEqual([]);
    expect(lookups).toEqual(['rebind.invalid', 'rebind.invalid']);

    const third = await guarded(url);
    expect(third.status).toBe(200);
    expect(forbidden.seen).toEqual([]);
    expect(lookups).toHaveLength(3);
  });

  it('refuses a name when any of its addresses is refused, before connecting', async () => {
    const resolve: EgressResolver = async () => [
      { address: '127.0.0.2', family: 4 },
      { address: '127.0.0.1', family: 4 },
    ];
    const guarded = createEgressFetch({ policy: EgressPolicy.fromAllowList('127.0.0.2/32'), resolve });
    await refusal(guarded(`http://mixed.invalid:${opened.port}/`));
    expect(forbidden.seen).toEqual([]);
  });

  it('refuses a name the system resolver answers with a non-public address', async () => {
    // The machine's own name resolves to loopback or a private address on any host.
    const guarded = createEgressFetch({ policy: new EgressPolicy() });
    const denied = await refusal(guarded(`http://${hostname()}:${forbidden.port}/`));
    expect(denied.host).toBe(hostname());
    await refusal(guarded(`http://localhost:${forbidden.port}/`));
    expect(forbidden.seen).toEqual([]);
  });

  it.each([
    'http://127.0.0.1:PORT/',
    'http://2130706433:PORT/',
    'http://0x7f.1:PORT/',
    'http://[::ffff:127.0.0.1]:PORT/',
  ])('refuses the literal %s without connecting', async (template) => {
    const guarded = createEgressFetch({ policy: new EgressPolicy() });
    const denied = await refusal(guarded(template.replace('PORT', String(forbidden.port))));
    expect(denied.message).toMatch(
      /^egress to (127\.0\.0\.1|\[::ffff:7f00:1\]) is refused: it is a loopback/,
    );
    expect(forbidden.seen).toEqual([]);
  });

  it('does not follow a redirect: the 3xx comes back as it is', async () => {
    const redirecting = await listen('127.0.0.2', 0, `http://127.0.0.1:${forbidden.port}/stolen`);
    try {
      const guarded = createEgressFetch({ policy: EgressPolicy.fromAllowList('127.0.0.0/8') });
      const response = await guarded(`http://127.0.0.2:${redirecting.port}/`, { redirect: 'follow' });
      expect(response.status).toBe(302);
      expect(redirecting.seen).toHaveLength(1);
      expect(forbidden.seen).toEqual([]);
    } finally {
      redirecting.server.close();
    }
  });
});

describe('the egress fetch over TLS', () => {
  it('connects to the checked address but verifies the certificate against the host name (SNI)', async () => {
    // A self-signed certificate for `egress.invalid`: trusted by nothing, so verification must fail.
    const dir = mkdtempSync(join(tmpdir(), 'egress-tls-'));
    const [key, cert] = [join(dir, 'key.pem'), join(dir, 'cert.pem')];
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=egress.invalid',
        '-addext',
        'subjectAltName=DNS:egress.invalid',
        '-keyout',
        key,
        '-out',
        cert,
      ],
      { stdio: 'ignore' },
    );
    const serverNames: string[] = [];
    let requests = 0;
    const context = createSecureContext({ key: readFileSync(key), cert: readFileSync(cert) });
    const server = createTlsServer(
      {
        key: readFileSync(key),
        cert: readFileSync(cert),
        SNICallback: (name, done) => {
          serverNames.push(name);
          done(null, context);
        },
      },
      (_req, res) => {
        requests++;
        res.end('{}');
      },
    );
    server.on('tlsClientError', () => undefined);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
    try {
      const port = (server.address() as AddressInfo).port;
      const resolve: EgressResolver = async () => [{ address: '127.0.0.2', family: 4 }];
      const guarded = createEgressFetch({ policy: EgressPolicy.fromAllowList('127.0.0.2/32'), resolve });
      const error = await guarded(`https://egress.invalid:${port}/`).then(
        () => undefined,
        (caught: unknown) => caught as Error & { cause?: { code?: string } },
      );
      // The socket reached 127.0.0.2 (the checked address) asking for egress.invalid; the
      // certificate was then refused: TLS is verified against the host name, not the address.
      expect(serverNames).toEqual(['egress.invalid']);
      expect(error?.cause?.code).toMatch(/SELF_SIGNED|UNABLE_TO_VERIFY/);
      expect(requests).toBe(0);
    } finally {
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
