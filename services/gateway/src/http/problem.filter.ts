import type { KeelLogger } from '@keel/runtime';
import { KEEL_LOGGER } from '@keel/runtime';
import type { ArgumentsHost, ExceptionFilter } from '@nestjs/common';
import { Catch, Inject } from '@nestjs/common';
import { REQUEST_ID_HEADER } from './request-id.js';
import { problemOf } from './problem.js';

/** The part of Fastify's request the filter reads. */
interface FilterRequest {
  id: string;
  method: string;
  url: string;
}

/** The part of Fastify's reply the filter writes. */
interface FilterReply {
  sent: boolean;
  status(code: number): FilterReply;
  header(name: string, value: string): FilterReply;
  send(body: string): unknown;
}

/**
 * Renders every error of the HTTP edge as `application/problem+json` (API.md Conventions):
 * KeelErrors by their code, Nest/Fastify errors by their status, anything else as a 500 whose
 * cause is logged and never sent. The request id is echoed on errors too.
 */
@Catch()
export class ProblemFilter implements ExceptionFilter {
  constructor(@Inject(KEEL_LOGGER) private readonly logger: KeelLogger) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    // Only the HTTP edge speaks problem+json; gRPC calls map their errors in their handlers.
    if (host.getType() !== 'http') throw exception;
    const http = host.switchToHttp();
    const request = http.getRequest<FilterRequest>();
    const reply = http.getResponse<FilterReply>();
    const { problem, internal } = problemOf(exception);
    const context = {
      requestId: request.id,
      correlationId: request.id,
      method: request.method,
      url: request.url,
    };
    if (internal) this.logger.error({ ...context, err: exception }, 'request failed');
    else this.logger.debug({ ...context, status: problem.status, code: problem.code }, 'request refused');
    if (reply.sent) return;
    reply.status(problem.status);
    reply.header('content-type', 'application/problem+json; charset=utf-8');
    reply.header(REQUEST_ID_HEADER, request.id);
    if (problem.status === 401) reply.header('www-authenticate', 'Bearer');
    reply.send(JSON.stringify(problem));
  }
}
