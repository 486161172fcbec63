// The errors a client meets first, through a real gateway process (with its agent and tools
// service on NATS and MongoDB): a body that is not JSON is 415 naming application/json (after a
// missing key's 401); a long path is 414 or 431, problem+json that never repeats the URL; a known
// path asked with another method is 405 with Allow, an unknown one 404; a trailing slash is the
// same route. A conversation shows the title and metadata it was created with, over HTTP and
// gRPC. A port that is taken stops a process with one line naming the variable to change.
import { freePort, startProcess } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { startGatewayPlatform } from './support/gateway-platform.js';
import { conversationsClient } from './support/grpc-client.js';
import type { Answer } from './support/http.js';
import { answerOf, jsonOf } from './support/http.js';

describe('errors a client sees (gateway, agent, tools as processes)', () => {
  let platform: GatewayPlatform;
  let keys: { admin: string; editor: string };

  beforeAll(async () => {
    platform = await startGatewayPlatform('clienterrors');
    keys = (await platform.tenantWithKeys('errors', ['admin', 'editor'] as const)).keys;
    await platform.configureSupportAgent(keys.admin);
  }, 120_000);

  afterAll(async () => {
    await platform?.stop();
  });

  /** A raw request: a body of any content type, any headers. */
  const send = async (
    method: string,
    path: string,
    options: { key?: string; body?: string; contentType?: string } = {},
  ): Promise<Answer> =>
    answerOf(
      await fetch(`${platform.base}${path}`, {
        method,
        headers: {
          ...(options.key === undefined ? {} : { authorization: `Bearer ${options.key}` }),
          ...(options.contentType === undefined ? {} : { 'content-type': options.contentType }),
        },
        ...(options.body === undefined ? {} : { body: options.body }),
      }),
    );

  const expectProblem = (answer: Answer, status: number, code: string): Record<string, unknown> => {
    expect(answer.status, answer.text.slice(0, 300)).toBe(status);
    expect(answer.contentType).toMatch(/^application\/problem\+json/);
    expect(answer.body).toMatchObject({ type: 'about:blank', status, code });
    expect(answer.headers.get('x-request-id')).toBeTruthy();
    return answer.body as Record<string, unknown>;
  };

  it('answers a form-encoded or text/plain body with 415 naming application/json, on every body route', async () => {
    const conversation = await jsonOf(
      await platform.request('POST', '/v1/conversations', keys.editor, { agentId: 'support' }),
    );
    const routes: Array<[string, string, string]> = [
      ['POST', '/v1/conversations', keys.editor],
      ['POST', `/v1/conversations/${String(conversation.id)}/messages`, keys.editor],
      ['PUT', '/v1/agents/support', keys.admin],
      ['PUT', '/v1/tools/refund', keys.admin],
    ];
    const bodies: Array<[string, string]> = [
      ['application/x-www-form-urlencoded', 'agentId=support&content=hi'],
      ['text/plain', '{"agentId":"support","content":"hi"}'],
      ['text/plain; charset=utf-8', 'hi'],
    ];
    for (const [method, path, key] of routes) {
      for (const [contentType, body] of bodies) {
        const problem = expectProblem(
          await send(method, path, { key, body, contentType }),
          415,
          'invalid_request',
        );
        expect(problem.detail).toContain('application/json');
        // Without a key it is still 401 first.
        expectProblem(await send(method, path, { body, contentType }), 401, 'unauthenticated');
      }
    }
    // Nothing was written: the agent is as it was.
    const agent = await jsonOf(await platform.request('GET', '/v1/agents/support', keys.admin));
    expect(agent.tools).toEqual(['refund']);
  });

  it('answers a long path parameter with 414 and an oversized URL with 431, problem+json without the URL', async () => {
    const long = 'a'.repeat(300);
    const problem = expectProblem(
      await send('GET', `/v1/conversations/${long}`, { key: keys.editor }),
      414,
      'invalid_request',
    );
    expect(problem.detail).toBe('path: a path parameter is longer than 256 characters');

    const huge = 'b'.repeat(20_000);
    const tooLarge = await send('GET', `/v1/conversations/${huge}`, { key: keys.editor });
    expectProblem(tooLarge, 431, 'invalid_request');
    expect(tooLarge.text).not.toContain('bbbbbbbbbb');

    // A parameter within the limit is routed: an id of another size is simply not found or refused by name.
    const routed = await send('GET', `/v1/conversations/${'c'.repeat(200)}`, { key: keys.editor });
    expect([400, 404]).toContain(routed.status);
    expect(routed.text).not.toContain('c'.repeat(100));
  });

  it('answers a known path with the wrong method 405 and Allow, and an unknown path 404', async () => {
    const collection = await send('DELETE', '/v1/conversations', { key: keys.editor });
    const problem = expectProblem(collection, 405, 'invalid_request');
    expect(collection.headers.get('allow')).toBe('GET, HEAD, POST');
    expect(problem.detail).toContain('DELETE');

    const agent = await send('PATCH', '/v1/agents/support', { key: keys.admin });
    expectProblem(agent, 405, 'invalid_request');
    expect(agent.headers.get('allow')?.split(', ')).toEqual(expect.arrayContaining(['GET', 'PUT']));

    const unknown = await send('GET', '/v1/nowhere', { key: keys.editor });
    expectProblem(unknown, 404, 'not_found');
    expect(unknown.headers.get('allow')).toBeNull();
    expectProblem(await send('DELETE', '/v1/nowhere/at/all', { key: keys.editor }), 404, 'not_found');
  });

  it('serves a path with a trailing slash as the path without it', async () => {
    const plain = await send('GET', '/v1/agents', { key: keys.admin });
    const slashed = await send('GET', '/v1/agents/', { key: keys.admin });
    expect(plain.status).toBe(200);
    expect(slashed.status).toBe(200);
    expect(slashed.body).toEqual(plain.body);
    expect((await send('GET', '/v1/agents/support/', { key: keys.admin })).status).toBe(200);
  });

  it('returns the title and metadata given at creation, over HTTP and gRPC', async () => {
    const created = await platform.request('POST', '/v1/conversations', keys.editor, {
      agentId: 'support',
      title: 'Refund for B-2',
      metadata: { ticket: 'T-42', channel: 'email' },
    });
    expect(created.status).toBe(201);
    const id = String((await jsonOf(created)).id);
    const shown = await jsonOf(await platform.request('GET', `/v1/conversations/${id}`, keys.editor));
    expect(shown).toMatchObject({
      id,
      title: 'Refund for B-2',
      metadata: { ticket: 'T-42', channel: 'email' },
    });

    const grpc = conversationsClient(platform.grpcAddress);
    try {
      const { conversation } = await grpc.unary('getConversation', keys.editor, { conversationId: id });
      expect(conversation?.title).toBe('Refund for B-2');
      expect(conversation?.metadata).toEqual({ ticket: 'T-42', channel: 'email' });
    } finally {
      grpc.close();
    }

    const untitled = await jsonOf(
      await platform.request('POST', '/v1/conversations', keys.editor, { agentId: 'support' }),
    );
    const bare = await jsonOf(
      await platform.request('GET', `/v1/conversations/${String(untitled.id)}`, keys.editor),
    );
    expect(bare).not.toHaveProperty('title');
    expect(bare).not.toHaveProperty('metadata');
  });

  it('stops a service whose port is taken with one line naming the variable, and exit code 1', async () => {
    const httpPort = new URL(platform.base).port;
    const grpcPort = platform.grpcAddress.split(':')[1]!;
    const [freeHttp, freeGrpc] = [String(await freePort()), String(await freePort())];
    const cases: Array<{ entry: string; env: Record<string, string>; line: string }> = [
      {
        entry: 'services/gateway/src/main.ts',
        env: {
          PORT: httpPort,
          GRPC_PORT: freeGrpc,
          KEEL_OPERATOR_KEY: platform.operatorKey,
          HOST: '127.0.0.1',
        },
        line: `PORT ${httpPort} is already in use on 127.0.0.1 (set PORT to another port)`,
      },
      {
        entry: 'services/gateway/src/main.ts',
        env: {
          PORT: freeHttp,
          GRPC_PORT: grpcPort,
          KEEL_OPERATOR_KEY: platform.operatorKey,
          HOST: '127.0.0.1',
        },
        line: `GRPC_PORT ${grpcPort} is already in use on 127.0.0.1 (set GRPC_PORT to another port)`,
      },
      {
        entry: 'services/agent/src/main.ts',
        env: { AGENT_GRPC_PORT: grpcPort },
        line: `AGENT_GRPC_PORT ${grpcPort} is already in use on 127.0.0.1 (set AGENT_GRPC_PORT to another port)`,
      },
    ];
    for (const { entry, env, line } of cases) {
      const handle = await startProcess({ name: 'taken', entry, env: { ...platform.env, ...env } });
      expect(await handle.waitForExit(30_000)).toEqual({ code: 1, signal: null });
      expect(handle.stderrLines.filter((text) => text.trim() !== '')).toEqual([line]);
      expect(handle.stdoutLines.join('\n')).not.toMatch(/\n\s+at /);
    }
  });
});
