// A refusal's status message travels in the HTTP/2 trailers: one larger than the peer's header
// limit stalls the whole connection, so every call beside and after it times out (seen as one
// tenant's 100,000-name list making every tenant's requests 503). With grpcStatusOf's cut, the
// refusal arrives and the calls around it are answered at once.
import * as grpc from '@grpc/grpc-js';
import { ValidationError } from '@keel/core';
import { freePort } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grpcStatusOf } from './grpc-status.js';

const identity = (b: Buffer): Buffer => b;
const ECHO = {
  echo: {
    path: '/test.Echo/Echo',
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  },
} satisfies grpc.ServiceDefinition;

describe('a refusal with a huge message on a shared gRPC connection', () => {
  const server = new grpc.Server();
  let client: grpc.Client & {
    echo: (b: Buffer, o: grpc.CallOptions, cb: grpc.requestCallback<Buffer>) => void;
  };

  beforeAll(async () => {
    server.addService(ECHO, {
      echo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
        if (call.request.toString() !== 'huge') return callback(null, Buffer.from('ok'));
        const names = Array.from({ length: 100_000 }, (_, i) => `t${i}`).join(', ');
        const status = grpcStatusOf(new ValidationError(`unknown tools: ${names}`, { field: 'tools' }));
        callback({ code: status.code, details: status.message });
      },
    });
    const port = await freePort();
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (e) =>
        e ? reject(e) : resolve(),
      ),
    );
    const Client = grpc.makeGenericClientConstructor(ECHO, 'Echo');
    client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as typeof client;
  });

  afterAll(() => {
    client?.close();
    server.forceShutdown();
  });

  const call = (text: string) =>
    new Promise<{ code: number; ms: number }>((resolve) => {
      const started = Date.now();
      client.echo(Buffer.from(text), { deadline: Date.now() + 3_000 }, (error) =>
        resolve({ code: error?.code ?? grpc.status.OK, ms: Date.now() - started }),
      );
    });

  it('answers the refusal and every call around it at once', async () => {
    const answers = await Promise.all([call('a'), call('huge'), call('b')]);
    expect(answers.map((a) => a.code)).toEqual([
      grpc.status.OK,
      grpc.status.INVALID_ARGUMENT,
      grpc.status.OK,
    ]);
    expect((await call('after')).code).toBe(grpc.status.OK);
    for (const answer of answers) expect(answer.ms).toBeLessThan(1_000);
  });
});
