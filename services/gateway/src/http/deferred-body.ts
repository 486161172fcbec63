import type { NestFastifyBodyParserOptions } from '@nestjs/platform-fastify';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import type { FastifyBodyParser } from 'fastify';

/** Where a body's parse error waits on the request until its caller is authenticated. */
const BODY_ERROR = Symbol.for('keel.gateway.body-error');

type WithBodyError = { [BODY_ERROR]?: unknown };

type Parser = FastifyBodyParser<Buffer>;

/** `parser`, except that an error it meets is kept on the request and the body left undefined. */
const deferringErrors =
  (parser: Parser): Parser =>
  (request, body, done) => {
    let settled = false;
    const settle = (error: unknown, value?: unknown): void => {
      if (settled) return;
      settled = true;
      if (error) (request as WithBodyError)[BODY_ERROR] = error;
      done(null, error ? undefined : value);
    };
    try {
      const result = (parser as (...args: unknown[]) => unknown)(request, body, settle);
      if (parser.length < 3) {
        Promise.resolve(result).then(
          (value) => settle(null, value),
          (error: unknown) => settle(error ?? new Error('body parser failed')),
        );
      }
    } catch (error) {
      settle(error ?? new Error('body parser failed'));
    }
  };

/**
 * The gateway's Fastify adapter, whose body parsers never answer for themselves: Fastify parses a
 * body before Nest's guards run, so a body that was not JSON (or not of a JSON content type) got
 * 400 before the AuthGuard could say 401, and API.md wants a missing or unknown key to be 401
 * whatever the body. Every parser registered through `useBodyParser` (the gateway's JSON parser,
 * the catch-all for other content types) keeps its error on the request instead;
 * `throwDeferredBodyError` throws it, unchanged, once the caller is authenticated. Errors met
 * before a parser runs (a body over the size limit: 413) are still answered at once.
 */
export class BodyDeferringFastifyAdapter extends FastifyAdapter {
  override useBodyParser(
    type: string | string[] | RegExp,
    rawBody: boolean,
    options?: NestFastifyBodyParserOptions,
    parser?: Parser,
  ): void {
    super.useBodyParser(type, rawBody, options, parser && deferringErrors(parser));
  }
}

const unsupportedMediaType = (): Error =>
  Object.assign(new Error('unsupported content-type (send application/json)'), {
    statusCode: 415,
    code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE',
  });

/** A body of any content type without a parser of its own: 415 (after authentication). */
export const refuseOtherContentTypes = (adapter: FastifyAdapter, bodyLimit: number): void => {
  adapter.useBodyParser('*', false, { bodyLimit }, (_request, _body, done) => {
    done(unsupportedMediaType(), undefined);
  });
};

/** Throws the error met parsing this request's body, if any (called once the caller is authenticated). */
export const throwDeferredBodyError = (request: object): void => {
  const error = (request as WithBodyError)[BODY_ERROR];
  if (error) throw error;
};
