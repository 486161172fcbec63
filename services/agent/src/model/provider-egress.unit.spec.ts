// Provider calls and the egress policy (API.md "Egress"): the platform key only ever goes to the
// platform's endpoint, and a tenant's baseUrl is called through the egress guard. A capture
// server on loopback stands for the attacker's server and records every request it gets.
import type { IncomingHttpHeaders, Server } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { ValidationError } from '@keel/core';
import { EgressDeniedError, EgressPolicy } from '@keel/runtime';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createModelStep } from './langchain-model-step.js';
import type { ProviderCredentials } from './model-step.js';

const PLATFORM_KEY = 'sk-platform-secret-0123456789';
const PLATFORM_ENV = {
  OPENAI_API_KEY: PLATFORM_KEY,
  ANTHROPIC_API_KEY: PLATFORM_KEY,
  GOOGLE_API_KEY: PLATFORM_KEY,
};

let server: Server;
let port: number;
let seen: IncomingHttpHeaders[] = [];

beforeAll(async () => {
  server = createServer((request, response) => {
    seen.push(request.headers);
    request.resume();
    response.writeHead(401, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ error: { message: 'captured', type: 'invalid_request_error' } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => server.close());
beforeEach(() => {
  seen = [];
});

/** One model call; resolves to the error it failed with. */
const failure = async (
  model: string,
  credentials: ProviderCredentials,
  options: { egress?: EgressPolicy; env?: Record<string, string> } = {},
): Promise<Error> => {
  const step = createModelStep({
    env: options.env ?? PLATFORM_ENV,
    maxRetries: 0,
    egress: options.egress ?? new EgressPolicy(),
  });
  try {
    await step({
      model,
      credentials,
      messages: [{ role: 'user', content: 'hi' }],
      tools: [],
      temperature: 0,
      signal: new AbortController().signal,
      onDelta: () => undefined,
    });
  } catch (error) {
    return error as Error;
  }
  throw new Error('the model call succeeded');
};

const sentKeys = () => seen.map((headers) => headers.authorization ?? headers['x-api-key'] ?? '');

describe('provider endpoints and the platform key', () => {
  it.each(['openai:gpt-4o-mini', 'anthropic:claude-test'])(
    '%s: a tenant baseUrl without its own key is refused naming apiKey, and nothing is sent',
    async (model) => {
      // Even with loopback opened, a stored baseUrl without a key never gets the platform key.
      const egress = EgressPolicy.fromAllowList('127.0.0.0/8');
      const error = await failure(model, { baseUrl: `http://127.0.0.1:${port}/v1` }, { egress });
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).field).toBe('apiKey');
      expect(error.message).toMatch(/provider config sets a baseUrl without an apiKey/);
      expect(seen).toEqual([]);
    },
  );

  it.each(['openai:gpt-4o-mini', 'anthropic:claude-test', 'ollama:llama3.2'])(
    '%s: a tenant baseUrl on loopback is refused by the egress guard before any request',
    async (model) => {
      for (const host of ['127.0.0.1', '2130706433', 'localhost', hostname()]) {
        const error = await failure(model, { apiKey: 'sk-tenant', baseUrl: `http://${host}:${port}/v1` });
        expect(error).toBeInstanceOf(EgressDeniedError);
        expect(error.message).toMatch(/^egress to \S+ is refused: /);
      }
      expect(seen).toEqual([]);
    },
  );

  it('google: a tenant baseUrl is refused (its client cannot be guarded), nothing is sent', async () => {
    const egress = EgressPolicy.fromAllowList('127.0.0.0/8');
    const error = await failure(
      'google:gemini-test',
      { apiKey: 'sk-tenant', baseUrl: `http://127.0.0.1:${port}` },
      { egress },
    );
    expect((error as ValidationError).field).toBe('baseUrl');
    expect(seen).toEqual([]);
  });

  it("a tenant endpoint that is allowed gets the tenant's key, never the platform's", async () => {
    const egress = EgressPolicy.fromAllowList('127.0.0.0/8');
    await failure(
      'openai:gpt-4o-mini',
      { apiKey: 'sk-tenant', baseUrl: `http://127.0.0.1:${port}/v1` },
      { egress },
    );
    await failure(
      'anthropic:claude-test',
      { apiKey: 'sk-tenant', baseUrl: `http://127.0.0.1:${port}` },
      { egress },
    );
    await failure(
      'ollama:llama3.2',
      { apiKey: 'sk-tenant', baseUrl: `http://127.0.0.1:${port}` },
      { egress },
    );
    expect(sentKeys()).toEqual(['Bearer sk-tenant', 'sk-tenant', 'Bearer sk-tenant']);
  });

  it("the platform's own endpoint (OPENAI_BASE_URL) is the operator's choice: not guarded", async () => {
    const env = { OPENAI_API_KEY: PLATFORM_KEY, OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1` };
    const error = await failure('openai:gpt-4o-mini', {}, { env });
    expect(error.message).toMatch(/401/);
    expect(error.message).not.toContain(PLATFORM_KEY);
    expect(sentKeys()).toEqual([`Bearer ${PLATFORM_KEY}`]);
  });
});
