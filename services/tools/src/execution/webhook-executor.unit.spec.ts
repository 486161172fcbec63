import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { EgressPolicy } from '@keel/runtime';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startTestWebhook } from './testing/webhook-server.js';
import type { TestWebhook } from './testing/webhook-server.js';
import { ToolCallCancelledError, WebhookExecutor, signBody, verifySignature } from './webhook-executor.js';
import type { WebhookAttemptInfo, WebhookRequest } from './webhook-executor.js';

const SECRET = 'whsec_test_4f1c2b9a-do-not-leak';

let hook: TestWebhook;
let callCounter = 0;

beforeEach(async () => {
  hook = await startTestWebhook(SECRET);
});
afterEach(async () => {
  await hook.close();
});

const request = (overrides: Partial<WebhookRequest> = {}): WebhookRequest => ({
  url: hook.url,
  tenantId: 'acme',
  conversationId: 'conv-1',
  toolCallId: `call_${++callCounter}`,
  args: { city: 'Lyon', when: ['today', 'tomorrow'], note: 'çà & "quotes"' },
  timeoutMs: 2000,
  secret: SECRET,
  ...overrides,
});

/** The test webhooks listen on loopback: opened on purpose, as KEEL_EGRESS_ALLOW would. */
const LOOPBACK = EgressPolicy.fromAllowList('127.0.0.0/8,::1/128');

/** Fast retries with the maximum of each jitter range, so waits are known. */
const executor = (overrides: ConstructorParameters<typeof WebhookExecutor>[0] = {}) =>
  new WebhookExecutor({ baseDelayMs: 40, maxDelayMs: 1000, random: () => 1, egress: LOOPBACK, ...overrides });

describe('webhook executor: the call contract', () => {
  it('POSTs the signed JSON body with Idempotency-Key and User-Agent; a 2xx JSON body is the result', async () => {
    hook.reply(() => ({ status: 200, body: JSON.stringify({ temperature: 21.5, sky: 'clear' }) }));
    const call = request();
    const result = await executor().call(call);
    expect(result).toEqual({
      ok: true,
      result: { temperature: 21.5, sky: 'clear' },
      attempts: 1,
      status: 200,
    });
    expect(hook.requests).toHaveLength(1);
    const [received] = hook.requests;
    expect(received?.method).toBe('POST');
    expect(received?.path).toBe('/hook');
    expect(received?.signatureValid).toBe(true);
    expect(JSON.parse(received?.body ?? '')).toEqual({
      toolCallId: call.toolCallId,
      conversationId: 'conv-1',
      tenantId: 'acme',
      args: call.args,
    });
    expect(received?.headers).toMatchObject({
      'content-type': 'application/json',
      'idempotency-key': call.toolCallId,
      'x-keel-signature': signBody(SECRET, received?.body ?? ''),
      'user-agent': 'keel-tools/0.1.0',
    });
  });

  it('accepts any 2xx with JSON, including a bare JSON value', async () => {
    hook.reply(() => ({ status: 201, body: '"done"', headers: { 'content-type': 'text/plain' } }));
    expect(await executor().call(request())).toEqual({ ok: true, result: 'done', attempts: 1, status: 201 });
  });

  it('a 2xx body that is not JSON is webhook_invalid_json, not retried', async () => {
    hook.reply(() => ({ status: 200, body: '<html>hello</html>', headers: { 'content-type': 'text/html' } }));
    const result = await executor().call(request());
    expect(result).toEqual({
      ok: false,
      attempts: 1,
      status: 200,
      error: {
        code: 'webhook_invalid_json',
        message:
          'the webhook answered 200 but its body is not JSON (content-type text/html): <html>hello</html>',
      },
    });
    expect(hook.requests).toHaveLength(1);
  });

  it('an empty 2xx body is webhook_invalid_json', async () => {
    hook.reply(() => ({ status: 204 }));
    const result = await executor().call(request());
    expect(result.ok === false && result.error.code).toBe('webhook_invalid_json');
    expect(result.ok === false && result.error.message).toMatch(/empty body/);
  });
});

describe('webhook executor: retries', () => {
  it('retries a 5xx with the same Idempotency-Key and signature, backing off between attempts', async () => {
    hook.reply((r) => (r.nthForKey < 3 ? { status: 503, body: 'busy' } : { status: 200, body: '{"n":3}' }));
    const attempts: WebhookAttemptInfo[] = [];
    const call = request();
    const result = await executor({ onAttempt: (info) => attempts.push(info) }).call(call);
    expect(result).toEqual({ ok: true, result: { n: 3 }, attempts: 3, status: 200 });
    expect(hook.countFor(call.toolCallId)).toBe(3);
    expect(new Set(hook.requests.map((r) => r.headers['x-keel-signature'])).size).toBe(1);
    expect(hook.requests.every((r) => r.signatureValid)).toBe(true);
    expect(hook.requests.map((r) => r.headers['x-keel-attempt'])).toEqual(['1', '2', '3']);
    // random() = 1: the waits are the caps, 40 ms then 80 ms.
    const [first, second, third] = hook.requests.map((r) => r.at);
    expect(second! - first!).toBeGreaterThanOrEqual(38);
    expect(third! - second!).toBeGreaterThanOrEqual(78);
    expect(
      attempts.map(({ attempt, status, errorCode, willRetry, delayMs }) => ({
        attempt,
        status,
        errorCode,
        willRetry,
        delayMs,
      })),
    ).toEqual([
      { attempt: 1, status: 503, errorCode: 'webhook_status_503', willRetry: true, delayMs: 40 },
      { attempt: 2, status: 503, errorCode: 'webhook_status_503', willRetry: true, delayMs: 80 },
      { attempt: 3, status: 200, errorCode: undefined, willRetry: false, delayMs: undefined },
    ]);
  });

  it('gives up after the configured attempts with the last status and what the webhook said', async () => {
    hook.reply(() => ({
      status: 500,
      body: 'database   is\n down',
      headers: { 'content-type': 'text/plain' },
    }));
    const call = request();
    const result = await executor({ maxAttempts: 4 }).call(call);
    expect(result).toEqual({
      ok: false,
      attempts: 4,
      status: 500,
      error: {
        code: 'webhook_status_500',
        message: 'the webhook answered 500 Internal Server Error: database is down (4 attempts)',
      },
    });
    expect(hook.countFor(call.toolCallId)).toBe(4);
  });

  it('never retries a 4xx, and shows the model what the webhook said', async () => {
    hook.reply(() => ({ status: 422, body: JSON.stringify({ error: 'city not found: Lyonn' }) }));
    const call = request();
    const result = await executor().call(call);
    expect(result).toEqual({
      ok: false,
      attempts: 1,
      status: 422,
      error: {
        code: 'webhook_status_422',
        message: 'the webhook answered 422 Unprocessable Entity: {"error":"city not found: Lyonn"}',
      },
    });
    expect(hook.countFor(call.toolCallId)).toBe(1);
  });

  it('stops at a 4xx that follows a 5xx', async () => {
    hook.reply((r) => (r.nthForKey === 1 ? { status: 502 } : { status: 400, body: 'bad' }));
    const result = await executor().call(request());
    expect(result.ok === false && result.error.code).toBe('webhook_status_400');
    expect(result.attempts).toBe(2);
    expect(hook.requests).toHaveLength(2);
  });

  it('does not follow redirects', async () => {
    hook.reply((r) =>
      r.path === '/hook' ? { status: 307, headers: { location: '/elsewhere' } } : { status: 200, body: '{}' },
    );
    const result = await executor().call(request());
    expect(result.ok === false && result.error).toEqual({
      code: 'webhook_status_307',
      message: 'the webhook answered 307 Temporary Redirect (redirects are not followed)',
    });
    expect(hook.requests.map((r) => r.path)).toEqual(['/hook']);
  });

  it('an unreachable webhook is retried, then webhook_unreachable', async () => {
    const port = await closedPort();
    const result = await executor().call(request({ url: `http://127.0.0.1:${port}/hook` }));
    expect(result).toEqual({
      ok: false,
      attempts: 3,
      status: undefined,
      error: {
        code: 'webhook_unreachable',
        message: 'the webhook could not be reached (ECONNREFUSED) (3 attempts)',
      },
    });
  });

  it('a URL that is not http(s), or carries credentials, is tool_misconfigured, never fetched', async () => {
    for (const url of [
      'ftp://example.com/x',
      'not a url',
      'file:///etc/passwd',
      'http://user:pw@127.0.0.1/x',
    ]) {
      const result = await executor().call(request({ url }));
      expect(result).toEqual({
        ok: false,
        attempts: 0,
        error: { code: 'tool_misconfigured', message: 'the tool has no valid http(s) webhook URL' },
      });
    }
  });
});

describe('webhook executor: timeouts, cancel and limits', () => {
  it('an attempt that gets no answer is aborted at timeoutMs and retried; then webhook_timeout', async () => {
    hook.reply(() => ({ hang: 'before-headers' }));
    const started = performance.now();
    const call = request({ timeoutMs: 150 });
    const result = await executor({ maxAttempts: 2 }).call(call);
    const elapsed = performance.now() - started;
    expect(result).toEqual({
      ok: false,
      attempts: 2,
      status: undefined,
      error: { code: 'webhook_timeout', message: 'the webhook did not answer within 150 ms (2 attempts)' },
    });
    expect(elapsed).toBeGreaterThanOrEqual(2 * 150 + 40 - 5);
    expect(elapsed).toBeLessThan(2000);
    expect(hook.countFor(call.toolCallId)).toBe(2);
    await Promise.all(hook.requests.map((r) => r.closed));
    expect(hook.requests.every((r) => r.abortedByClient())).toBe(true);
  });

  it('the deadline covers the body too: a body that stalls after the headers times out', async () => {
    hook.reply((r) =>
      r.nthForKey === 1 ? { hang: 'after-headers' } : { status: 200, body: '{"second":true}' },
    );
    const result = await executor().call(request({ timeoutMs: 150 }));
    expect(result).toEqual({ ok: true, result: { second: true }, attempts: 2, status: 200 });
  });

  it('cancelling through the signal stops at once, closes the connection and does not retry', async () => {
    hook.reply(() => ({ hang: 'before-headers' }));
    const controller = new AbortController();
    const call = request({ timeoutMs: 10_000, signal: controller.signal });
    const pending = executor().call(call);
    await waitFor(() => hook.requests.length === 1);
    const started = performance.now();
    controller.abort(new Error('turn cancelled'));
    await expect(pending).rejects.toBeInstanceOf(ToolCallCancelledError);
    expect(performance.now() - started).toBeLessThan(500);
    await hook.requests[0]?.closed;
    expect(hook.requests[0]?.abortedByClient()).toBe(true);
    await new Promise((r) => setTimeout(r, 150));
    expect(hook.countFor(call.toolCallId)).toBe(1);
  });

  it('cancelling during the backoff wait stops without another attempt', async () => {
    hook.reply(() => ({ status: 500 }));
    const controller = new AbortController();
    const call = request({ signal: controller.signal });
    const pending = executor({ baseDelayMs: 5000, maxDelayMs: 5000 }).call(call);
    await waitFor(() => hook.requests.length === 1);
    await new Promise((r) => setTimeout(r, 30));
    controller.abort();
    await expect(pending).rejects.toBeInstanceOf(ToolCallCancelledError);
    expect(hook.countFor(call.toolCallId)).toBe(1);
  });

  it('an already cancelled signal sends nothing', async () => {
    const result = executor().call(request({ signal: AbortSignal.abort() }));
    await expect(result).rejects.toBeInstanceOf(ToolCallCancelledError);
    expect(hook.requests).toHaveLength(0);
  });

  it('refuses a response body over the limit, declared or streamed, without retrying', async () => {
    const big = JSON.stringify({ data: 'x'.repeat(2000) });
    hook.reply(() => ({ status: 200, body: big }));
    const declared = await executor({ maxResponseBytes: 1024 }).call(request());
    expect(declared).toEqual({
      ok: false,
      attempts: 1,
      status: 200,
      error: {
        code: 'webhook_response_too_large',
        message: "the webhook's response is larger than the 1024-byte limit",
      },
    });
    hook.reply(() => ({ chunks: ['{"data":"', 'y'.repeat(800), 'y'.repeat(800), '"}'], chunkDelayMs: 5 }));
    const streamed = await executor({ maxResponseBytes: 1024 }).call(request());
    expect(streamed.ok === false && streamed.error.code).toBe('webhook_response_too_large');
    expect(hook.requests).toHaveLength(2);
    hook.reply(() => ({ chunks: ['{"data":"', 'z'.repeat(500), '"}'], chunkDelayMs: 5 }));
    const fits = await executor({ maxResponseBytes: 1024 }).call(request());
    expect(fits).toEqual({ ok: true, result: { data: 'z'.repeat(500) }, attempts: 1, status: 200 });
  });

  it('never puts the secret in a result, an error or an attempt report', async () => {
    const reports: WebhookAttemptInfo[] = [];
    const seen: unknown[] = [];
    for (const reply of [
      { status: 200, body: '{}' },
      { status: 500, body: 'oops' },
      { status: 401, body: 'bad signature' },
      { status: 200, body: 'nope' },
    ]) {
      hook.reply(() => reply);
      seen.push(await executor({ maxAttempts: 2, onAttempt: (r) => reports.push(r) }).call(request()));
    }
    seen.push(
      await executor({ maxAttempts: 1 }).call(request({ url: `http://127.0.0.1:${await closedPort()}` })),
    );
    expect(JSON.stringify([seen, reports])).not.toContain(SECRET);
  });
});

describe('signBody / verifySignature', () => {
  it('is HMAC-SHA256 in hex (RFC 4231 test case 2)', () => {
    expect(signBody('Jefe', 'what do ya want for nothing?')).toBe(
      'sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
    );
    expect(signBody('Jefe', Buffer.from('what do ya want for nothing?'))).toBe(
      signBody('Jefe', 'what do ya want for nothing?'),
    );
  });

  it('verifies the exact bytes under the right secret only', () => {
    const body = '{"toolCallId":"c1","args":{"a":1}}';
    const header = signBody('s3cret', body);
    expect(verifySignature('s3cret', body, header)).toBe(true);
    expect(
      verifySignature('s3cret', Buffer.from(body), header.toUpperCase().replace('SHA256=', 'sha256=')),
    ).toBe(true);
    expect(verifySignature('other', body, header)).toBe(false);
    expect(verifySignature('s3cret', `${body} `, header)).toBe(false);
    expect(verifySignature('s3cret', body, header.slice('sha256='.length))).toBe(false);
    expect(verifySignature('s3cret', body, `sha1=${header.slice(7)}`)).toBe(false);
    expect(verifySignature('s3cret', body, `${header}00`)).toBe(false);
    expect(verifySignature('s3cret', body, 'sha256=zz')).toBe(false);
    expect(verifySignature('s3cret', body, undefined)).toBe(false);
    expect(verifySignature('s3cret', body, null)).toBe(false);
  });
});

/** A port on 127.0.0.1 nothing listens on (bound, then released). */
const closedPort = async (): Promise<number> => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
};

const waitFor = async (condition: () => boolean): Promise<void> => {
  const deadline = Date.now() + 5000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met within 5 s');
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe('webhook executor: the egress guard', () => {
  it('refuses a loopback webhook when loopback is not opened: egress_denied, once, nothing sent', async () => {
    const strict = executor({ egress: new EgressPolicy() });
    for (const url of [
      hook.url,
      hook.url.replace('127.0.0.1', '2130706433'),
      hook.url.replace('127.0.0.1', '0x7f.1'),
    ]) {
      const result = await strict.call(request({ url }));
      expect(result).toEqual({
        ok: false,
        attempts: 1,
        error: { code: 'egress_denied', message: 'egress to 127.0.0.1 is refused: it is a loopback address' },
      });
    }
    const named = await strict.call(request({ url: hook.url.replace('127.0.0.1', 'localhost') }));
    expect(named.ok).toBe(false);
    expect(!named.ok && named.error.code).toBe('egress_denied');
    expect(hook.requests).toEqual([]);
  });

  it('does not follow a redirect to an address it would refuse', async () => {
    hook.reply(() => ({
      status: 302,
      headers: { location: 'http://169.254.169.254/latest/meta-data/' },
      body: '',
    }));
    const result = await executor().call(request());
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error.code).toBe('webhook_status_302');
    expect(hook.requests).toHaveLength(1);
  });
});
