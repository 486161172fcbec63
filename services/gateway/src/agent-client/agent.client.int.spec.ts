// The gateway's AgentService client against a stub grpc-js server: what it sends (the CallContext
// and the request) and how failed calls come back (KeelErrors the HTTP edge renders).
import type { ServiceClientConstructor, ServerUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import { loadPackageDefinition, Server, ServerCredentials, status } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { ConflictError, NotFoundError, UnavailableError, ValidationError } from '@keel/core';
import { IfBusy } from '@keel/proto/keel/conversations/v1/conversations';
import { PROTO_LOADER_OPTIONS, protoRoot } from '@keel/runtime';
import { freePort } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentClient, callContextOf } from './agent.client.js';

type Handler = (
  call: ServerUnaryCall<Record<string, unknown>, unknown>,
  callback: sendUnaryData<unknown>,
) => void;

const context = callContextOf(
  { kind: 'tenant', tenantId: 't-1', keyId: 'k-1', role: 'editor', userId: 'ana' },
  'req-42',
);

describe('AgentClient', () => {
  const server = new Server();
  const seen: Array<Record<string, unknown>> = [];
  let client: AgentClient;

  beforeAll(async () => {
    const definition = loadSync('keel/agent/v1/agent.proto', {
      ...PROTO_LOADER_OPTIONS,
      includeDirs: [protoRoot()],
    });
    const root = loadPackageDefinition(definition) as unknown as {
      keel: { agent: { v1: { AgentService: ServiceClientConstructor } } };
    };
    const handlers: Record<string, Handler> = {
      SubmitMessage: (call, callback) => {
        seen.push(call.request);
        const slow = (call.request as { request?: { content?: string } }).request?.content === 'slow';
        setTimeout(() => callback(null, { turnId: 'turn-1', version: 7 }), slow ? 1_500 : 0);
      },
      CancelTurn: (_call, callback) => callback({ code: status.ABORTED, details: 'no turn is running' }),
      GetConversation: (_call, callback) =>
        callback({ code: status.NOT_FOUND, details: 'conversation not found' }),
      PutAgent: (_call, callback) =>
        callback({ code: status.INVALID_ARGUMENT, details: 'tools: unknown tools: teleport' }),
      ListTools: () => undefined, // never answers: the deadline ends the call
    };
    server.addService(root.keel.agent.v1.AgentService.service, handlers);
    const port = await freePort();
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (error) =>
        error ? reject(error) : resolve(),
      ),
    );
    client = new AgentClient(`127.0.0.1:${port}`, 500);
  });

  afterAll(() => {
    client?.onModuleDestroy();
    server.forceShutdown();
  });

  it('sends the caller as the CallContext (request id as correlation id) with the request', async () => {
    const response = await client.call('submitMessage', context, {
      request: { conversationId: 'c-1', content: 'hi', ifBusy: IfBusy.ENQUEUE },
    });
    expect(response).toEqual({ turnId: 'turn-1', version: 7 });
    expect(seen[0]).toMatchObject({
      context: {
        tenantId: 't-1',
        actor: { keyId: 'k-1', role: 'editor', userId: 'ana' },
        correlationId: 'req-42',
      },
      request: { conversationId: 'c-1', content: 'hi', ifBusy: 'IF_BUSY_ENQUEUE' },
    });
  });

  it('turns statuses into KeelErrors: ABORTED a conflict, NOT_FOUND, INVALID_ARGUMENT keeping the message', async () => {
    const conflict = await client
      .call('cancelTurn', context, { request: { conversationId: 'c-1' } })
      .catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(ConflictError);
    expect(conflict).toMatchObject({ message: 'no turn is running' });
    await expect(
      client.call('getConversation', context, { request: { conversationId: 'x' } }),
    ).rejects.toBeInstanceOf(NotFoundError);
    const invalid = await client.call('putAgent', context, { agent: {} }).catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(ValidationError);
    expect(invalid).toMatchObject({ message: 'tools: unknown tools: teleport' });
  });

  it("waits longer for a message's submission than for other calls (a burst of turns waits in line)", async () => {
    // The client's deadline is 500 ms; a submission's is SUBMIT_DEADLINE_MS (30 s).
    const response = await client.call('submitMessage', context, {
      request: { conversationId: 'c-1', content: 'slow', ifBusy: IfBusy.ENQUEUE },
    });
    expect(response).toEqual({ turnId: 'turn-1', version: 7 });
  });

  it('answers a call past its deadline, or an agent nobody listens for, as unavailable', async () => {
    await expect(client.call('listTools', context)).rejects.toBeInstanceOf(UnavailableError);
    const nowhere = new AgentClient(`127.0.0.1:${await freePort()}`, 2_000);
    try {
      await expect(nowhere.call('listTools', context)).rejects.toBeInstanceOf(UnavailableError);
    } finally {
      nowhere.onModuleDestroy();
    }
  });
});
