import type { Socket } from 'node:net';
import type { FastifyAdapter } from '@nestjs/platform-fastify';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { checkJsonTree, decodeUtf8Body } from './json-body.js';
import { BodyDeferringFastifyAdapter, refuseOtherContentTypes } from './deferred-body.js';
import { REQUEST_ID_HEADER, requestIdOf } from './request-id.js';

/** Largest request body the gateway reads (API.md: over it, 413 `payload_too_large`). */
export const BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * The gateway's Fastify adapter: a 1 MiB body limit, and the request id taken from
 * `X-Request-Id` (or generated) and echoed on every response, 404s and errors included, since
 * the hook runs before routing and body parsing. A body that cannot be parsed is answered only
 * after authentication (deferred-body.ts).
 */
export const createGatewayHttpAdapter = (): FastifyAdapter => {
  const adapter = new BodyDeferringFastifyAdapter({
    bodyLimit: BODY_LIMIT_BYTES,
    requestIdHeader: false,
    genReqId: requestIdOf,
    frameworkErrors: answerUnroutableUrl,
  });
  adapter.getInstance().addHook('onRequest', (request, reply, done) => {
    void reply.header(REQUEST_ID_HEADER, request.id);
    done();
  });
  useCheckedJsonBodies(adapter);
  refuseOtherContentTypes(adapter, BODY_LIMIT_BYTES);
  closeQuietConnectionsOnClose(adapter);
  return adapter;
};

/**
 * Errors Fastify meets before routing (a path whose percent-encoding is not UTF-8, `%FF` or an
 * encoded lone surrogate `%ED%A0%80`) are problems like every other answer: 400 naming the path.
 */
const answerUnroutableUrl = (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
  const detail =
    error.code === 'FST_ERR_BAD_URL' ? 'path: is not valid UTF-8 percent-encoding' : 'path: cannot be routed';
  void reply
    .code(400)
    .header('content-type', 'application/problem+json; charset=utf-8')
    .header(REQUEST_ID_HEADER, request.id)
    .send(
      JSON.stringify({
        type: 'about:blank',
        title: 'Bad Request',
        status: 400,
        detail,
        code: 'invalid_request',
      }),
    );
};

/**
 * At close, drops the connections with no request in flight. Node's `server.close()` closes idle
 * keep-alive connections, but not one a client opened and has sent nothing on yet (undici opens
 * one after an aborted request, e.g. a client leaving an SSE stream): the close then waited for
 * the client to drop it (undici: 4 s). Connections serving a request are left to finish; the SSE
 * streams are ended before this (their services stop them at shutdown).
 */
const closeQuietConnectionsOnClose = (adapter: FastifyAdapter): void => {
  const instance = adapter.getInstance();
  const sockets = new Set<Socket>();
  instance.server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  instance.addHook('preClose', (done) => {
    for (const socket of sockets) {
      // Node sets `_httpMessage` to the response being written on the socket, if any.
      if (!(socket as Socket & { _httpMessage?: unknown })._httpMessage) socket.destroy();
    }
    done();
  });
};

/**
 * JSON bodies are read as bytes and refused with 400 naming the field unless they are valid UTF-8
 * (Fastify would decode bad bytes to U+FFFD and store that), parse with Fastify's own secure
 * parser (`__proto__` / `constructor.prototype` keys refused), and pass `checkJsonTree` (depth,
 * size, lone surrogates): routes and the recursive code behind them only see checked values.
 */
const useCheckedJsonBodies = (adapter: FastifyAdapter): void => {
  const instance = adapter.getInstance();
  const parseJson = instance.getDefaultJsonParser('error', 'error');
  adapter.useBodyParser('application/json', false, { bodyLimit: BODY_LIMIT_BYTES }, (request, body, done) => {
    let text: string;
    try {
      text = decodeUtf8Body(body as Buffer);
    } catch (error) {
      done(error as Error, undefined);
      return;
    }
    void parseJson(request, text, (error: Error | null, parsed?: unknown) => {
      if (error) return done(error, undefined);
      try {
        checkJsonTree(parsed);
      } catch (invalid) {
        return done(invalid as Error, undefined);
      }
      done(null, parsed);
    });
  });
};
