import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyAdapter } from '@nestjs/platform-fastify';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { defaultConsoleDir, serveConsole } from '../console/console-assets.js';
import { checkJsonTree, decodeUtf8Body } from './json-body.js';
import { BodyDeferringFastifyAdapter, refuseOtherContentTypes } from './deferred-body.js';
import { REQUEST_ID_HEADER, requestIdOf } from './request-id.js';
import { RouteTable } from './route-table.js';

/** Largest request body the gateway reads (API.md: over it, 413 `payload_too_large`). */
export const BODY_LIMIT_BYTES = 1024 * 1024;

/** Longest path parameter (ids are at most 64 characters); over it, 414 problem+json. */
export const MAX_PARAM_LENGTH = 256;

/** Longest path a 404's detail repeats; a longer one is cut (the detail stays short). */
const SHOWN_PATH_LENGTH = 100;

/** The problem+json body of an answer the gateway writes itself, before Nest's filter can. */
const problemBody = (status: number, detail: string): string =>
  JSON.stringify({
    type: 'about:blank',
    title: STATUS_CODES[status] ?? 'Error',
    status,
    detail,
    code: status === 404 ? 'not_found' : 'invalid_request',
  });

const sendProblem = (reply: FastifyReply, requestId: string, status: number, detail: string): void => {
  void reply
    .code(status)
    .header('content-type', 'application/problem+json; charset=utf-8')
    .header(REQUEST_ID_HEADER, requestId)
    .send(problemBody(status, detail));
};

/**
 * The gateway's adapter: a path no route serves is 404, but a path served with other methods is
 * 405 with `Allow` (Nest's own handler answers 404 for both and repeats the whole URL).
 */
class GatewayFastifyAdapter extends BodyDeferringFastifyAdapter {
  readonly routes = new RouteTable();

  // Nest's handler is replaced, not wrapped: it would repeat the URL in its detail.
  override setNotFoundHandler(): ReturnType<FastifyAdapter['setNotFoundHandler']> {
    return this.getInstance().setNotFoundHandler((request, reply) => {
      const path = request.url.split('?', 1)[0] ?? '';
      const allowed = this.routes.methodsOf(path);
      if (allowed.length > 0) {
        void reply.header('allow', allowed.join(', '));
        sendProblem(
          reply,
          request.id,
          405,
          `${request.method} is not allowed here (Allow: ${allowed.join(', ')})`,
        );
        return;
      }
      const shown = path.length > SHOWN_PATH_LENGTH ? `${path.slice(0, SHOWN_PATH_LENGTH)}…` : path;
      sendProblem(reply, request.id, 404, `Cannot ${request.method} ${shown}`);
    });
  }
}

/**
 * The gateway's Fastify adapter: a 1 MiB body limit, and the request id taken from
 * `X-Request-Id` (or generated) and echoed on every response, 404s and errors included, since
 * the hook runs before routing and body parsing. A body that cannot be parsed is answered only
 * after authentication (deferred-body.ts). The operator console's files are served at /console
 * from `consoleDir` (console-assets.ts).
 */
export const createGatewayHttpAdapter = (consoleDir: string = defaultConsoleDir()): FastifyAdapter => {
  const adapter = new GatewayFastifyAdapter({
    bodyLimit: BODY_LIMIT_BYTES,
    requestIdHeader: false,
    genReqId: requestIdOf,
    frameworkErrors: answerUnroutableUrl,
    clientErrorHandler: answerMalformedRequest,
    // `/v1/agents/` is `/v1/agents`.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
  });
  const instance = adapter.getInstance();
  instance.addHook('onRoute', (route) => adapter.routes.add(route.method, route.url));
  instance.addHook('onRequest', (request, reply, done) => {
    void reply.header(REQUEST_ID_HEADER, request.id);
    done();
  });
  // Fastify reads `text/plain` bodies as strings: they get the 415 of every non-JSON body instead.
  instance.removeContentTypeParser('text/plain');
  useCheckedJsonBodies(adapter);
  refuseOtherContentTypes(adapter, BODY_LIMIT_BYTES);
  closeQuietConnectionsOnClose(adapter);
  serveConsole(instance, consoleDir);
  return adapter;
};

/**
 * Errors Fastify meets before routing are problems like every other answer, and never repeat the
 * URL: a path whose percent-encoding is not UTF-8 (`%FF`, an encoded lone surrogate `%ED%A0%80`)
 * is 400 naming the path, a path parameter over `MAX_PARAM_LENGTH` is 414.
 */
const answerUnroutableUrl = (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    sendProblem(
      reply,
      request.id,
      414,
      `path: a path parameter is longer than ${MAX_PARAM_LENGTH} characters`,
    );
    return;
  }
  const detail =
    error.code === 'FST_ERR_BAD_URL' ? 'path: is not valid UTF-8 percent-encoding' : 'path: cannot be routed';
  sendProblem(reply, request.id, 400, detail);
};

/** What Node's HTTP parser refuses, by its error code: status and detail. */
const MALFORMED: Readonly<Record<string, [number, string]>> = {
  HPE_HEADER_OVERFLOW: [431, 'the request line and headers are larger than the server reads (16 KiB)'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'the request was not received in time'],
};

/**
 * A request Node's HTTP parser refuses before Fastify sees it (a URL or headers over 16 KiB, a
 * malformed request line) gets problem+json too, with a request id of its own, never the URL;
 * the connection is then closed, as Node does.
 */
function answerMalformedRequest(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, detail] = MALFORMED[error.code ?? ''] ?? [400, 'the request is not valid HTTP/1.1'];
  const body = problemBody(status, detail);
  if (socket.writable) {
    socket.write(
      [
        `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}`,
        'content-type: application/problem+json; charset=utf-8',
        `content-length: ${Buffer.byteLength(body)}`,
        `${REQUEST_ID_HEADER}: ${requestIdOf({ headers: {} })}`,
        'connection: close',
        '',
        body,
      ].join('\r\n'),
    );
  }
  socket.destroy(error);
}

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
