import { afterEach, describe, expect, it } from 'vitest';
import {
  BodyDeferringFastifyAdapter,
  refuseOtherContentTypes,
  throwDeferredBodyError,
} from './deferred-body.js';

/** A Fastify app whose one route answers what the gateway's guard would, once the caller is admitted. */
const appWith = async (register: (adapter: BodyDeferringFastifyAdapter) => void) => {
  const adapter = new BodyDeferringFastifyAdapter({ bodyLimit: 1024 });
  register(adapter);
  refuseOtherContentTypes(adapter, 1024);
  const app = adapter.getInstance();
  app.post('/', async (request) => {
    try {
      throwDeferredBodyError(request);
    } catch (error) {
      const { statusCode, message } = error as { statusCode?: number; message: string };
      return { deferred: statusCode ?? 400, message };
    }
    return { body: request.body ?? null };
  });
  await app.ready();
  return app;
};

describe('BodyDeferringFastifyAdapter', () => {
  let close: (() => Promise<unknown>) | undefined;
  afterEach(async () => close?.());

  it('keeps a parser error on the request for after authentication, and passes good bodies on', async () => {
    const app = await appWith((adapter) => {
      const json = adapter.getInstance().getDefaultJsonParser('error', 'error');
      adapter.useBodyParser('application/json', false, { bodyLimit: 1024 }, (request, body, done) => {
        void json(request, body.toString('utf8'), done);
      });
      // A parser that answers by its promise (no `done`) is deferred the same way.
      adapter.useBodyParser(
        'application/vnd.keel+json',
        false,
        { bodyLimit: 1024 },
        async (_request: unknown, body: Buffer) => {
          if (body.length === 0) throw Object.assign(new Error('empty'), { statusCode: 400 });
          return { length: body.length };
        },
      );
    });
    close = () => app.close();
    const post = (contentType: string, payload: string) =>
      app.inject({ method: 'POST', url: '/', headers: { 'content-type': contentType }, payload });

    expect((await post('application/json', '{"a": 1}')).json()).toEqual({ body: { a: 1 } });
    const bad = await post('application/json', '{"a": ');
    expect(bad.statusCode).toBe(200);
    expect(bad.json()).toMatchObject({ deferred: 400 });
    expect((await post('application/json', '{"__proto__": {"x": 1}}')).json()).toMatchObject({
      deferred: 400,
    });
    expect((await post('application/vnd.keel+json', 'abc')).json()).toEqual({ body: { length: 3 } });
    expect((await post('application/vnd.keel+json', '')).json()).toMatchObject({ deferred: 400 });
    expect((await post('application/xml', '<a/>')).json()).toMatchObject({ deferred: 415 });
    // Over the size limit is still answered at once (the body is never handed to a parser).
    expect((await post('application/json', `"${'x'.repeat(2000)}"`)).statusCode).toBe(413);
  });
});
