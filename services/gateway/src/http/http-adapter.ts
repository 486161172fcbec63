import { FastifyAdapter } from '@nestjs/platform-fastify';
import { REQUEST_ID_HEADER, requestIdOf } from './request-id.js';

/** Largest request body the gateway reads (API.md: over it, 413 `payload_too_large`). */
export const BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * The gateway's Fastify adapter: a 1 MiB body limit, and the request id taken from
 * `X-Request-Id` (or generated) and echoed on every response, 404s and errors included, since
 * the hook runs before routing and body parsing.
 */
export const createGatewayHttpAdapter = (): FastifyAdapter => {
  const adapter = new FastifyAdapter({
    bodyLimit: BODY_LIMIT_BYTES,
    requestIdHeader: false,
    genReqId: requestIdOf,
  });
  adapter.getInstance().addHook('onRequest', (request, reply, done) => {
    void reply.header(REQUEST_ID_HEADER, request.id);
    done();
  });
  return adapter;
};
