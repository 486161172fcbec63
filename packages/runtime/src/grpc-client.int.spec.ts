// GrpcClient on a generated service definition against an in-process grpc-js server: the
// generated types travel both ways, metadata reaches the server, and a missed deadline or a
// refusal becomes the caller's error.
import * as grpc from '@grpc/grpc-js';
import type { ComputeCostRequest, ComputeCostResponse } from '@keel/proto/keel/pricing/v1/pricing';
import {
  ComputeCostRequest as ComputeCostMessage,
  PricingServiceService,
} from '@keel/proto/keel/pricing/v1/pricing';
import { freePort } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callUnary, GrpcClient } from './grpc-client.js';

class Mapped extends Error {
  constructor(readonly code: number) {
    super(`mapped ${code}`);
  }
}

describe('GrpcClient', () => {
  const server = new grpc.Server();
  let address = '';
  const seen: { request?: ComputeCostRequest; requestId?: string } = {};

  beforeAll(async () => {
    const unimplemented = (_call: unknown, callback: grpc.sendUnaryData<never>) =>
      callback({ code: grpc.status.UNIMPLEMENTED });
    server.addService(PricingServiceService, {
      getPrice: unimplemented,
      listModels: unimplemented,
      setPrice: unimplemented,
      computeCost: (
        call: grpc.ServerUnaryCall<ComputeCostRequest, ComputeCostResponse>,
        callback: grpc.sendUnaryData<ComputeCostResponse>,
      ) => {
        seen.request = call.request;
        seen.requestId = String(call.metadata.get('x-request-id')[0] ?? '');
        const headers = new grpc.Metadata();
        headers.set('x-served-by', 'stub');
        call.sendMetadata(headers);
        if (call.request.model === 'slow')
          return void setTimeout(() => callback(null, { reason: 'late' }), 500);
        if (call.request.model === 'refused')
          return callback({ code: grpc.status.NOT_FOUND, details: 'no model' });
        callback(null, { costUsd: 0.25, reason: '' });
      },
    });
    const port = await freePort();
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (error) =>
        error ? reject(error) : resolve(),
      ),
    );
    address = `127.0.0.1:${port}`;
  });

  afterAll(() => server.forceShutdown());

  const request: ComputeCostRequest = {
    model: 'openai:gpt-4o-mini',
    inputTokens: 1_000,
    outputTokens: 20,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    at: '',
  };

  it('sends the typed request with its metadata and resolves the typed response', async () => {
    const client = new GrpcClient(address, { deadlineMs: 2_000 });
    try {
      let headers: grpc.Metadata | undefined;
      const response = await client.unary(PricingServiceService.computeCost, request, {
        metadata: { 'x-request-id': 'req-1' },
        onHeaders: (received) => (headers = received),
      });
      expect(headers?.get('x-served-by')).toEqual(['stub']);
      expect(response).toEqual({ costUsd: 0.25, reason: '' });
      expect(seen.request).toMatchObject({
        model: 'openai:gpt-4o-mini',
        inputTokens: 1_000,
        outputTokens: 20,
      });
      expect(seen.requestId).toBe('req-1');
    } finally {
      client.close();
    }
  });

  it('rejects with errorOf(failure) for a refusal and for a missed deadline', async () => {
    const client = new GrpcClient(address, {
      deadlineMs: 2_000,
      errorOf: (failure) => new Mapped(failure.code),
    });
    try {
      await expect(
        client.unary(PricingServiceService.computeCost, { ...request, model: 'refused' }),
      ).rejects.toEqual(new Mapped(grpc.status.NOT_FOUND));
      const late = client.unary(
        PricingServiceService.computeCost,
        { ...request, model: 'slow' },
        { deadlineMs: 100 },
      );
      await expect(late).rejects.toBeInstanceOf(Mapped);
      await expect(late).rejects.toMatchObject({ code: grpc.status.DEADLINE_EXCEEDED });
    } finally {
      client.close();
    }
  });

  it('callUnary fills the fields a call leaves out with their proto defaults from the request table', async () => {
    const client = new GrpcClient(address, { deadlineMs: 2_000 });
    try {
      const requests = { computeCost: ComputeCostMessage };
      const response = await callUnary(client, PricingServiceService, requests, 'computeCost', {
        model: 'openai:gpt-4o',
      });
      expect(response).toEqual({ costUsd: 0.25, reason: '' });
      expect(seen.request).toEqual({ ...request, model: 'openai:gpt-4o', inputTokens: 0, outputTokens: 0 });
    } finally {
      client.close();
    }
  });

  it('without errorOf rejects with the ServiceError as grpc-js gives it', async () => {
    const client = new GrpcClient(address, { deadlineMs: 2_000 });
    try {
      await expect(
        client.unary(PricingServiceService.computeCost, { ...request, model: 'refused' }),
      ).rejects.toMatchObject({ code: grpc.status.NOT_FOUND, details: 'no model' });
    } finally {
      client.close();
    }
  });
});
