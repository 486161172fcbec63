import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayHttpAdapter } from '../http/http-adapter.js';

const INDEX = '<!doctype html><title>Keel console</title><div id="root"></div>';

describe('the console served by the gateway at /console', () => {
  let dir: string;
  let app: FastifyInstance;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'keel-console-'));
    await mkdir(join(dir, 'assets'));
    await writeFile(join(dir, 'index.html'), INDEX);
    await writeFile(join(dir, 'assets', 'index-abc123.js'), 'console.log("console")');
    await writeFile(join(tmpdir(), 'keel-console-secret.txt'), 'not for the browser');
    app = createGatewayHttpAdapter(dir).getInstance();
    await app.ready();
  });

  afterAll(async () => {
    await app.close();
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    '/console',
    '/console/',
    '/console/tenants',
    '/console/conversations/c_1/',
    '/console/usage?tz=UTC',
  ])('%s answers the index page (the console routes in the browser)', async (url) => {
    const answer = await app.inject({ method: 'GET', url });
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(answer.headers['cache-control']).toBe('no-cache');
    expect(answer.headers['content-security-policy']).toContain("script-src 'self'");
    expect(answer.body).toBe(INDEX);
  });

  it('serves a built asset with its type, cached for good (hashed names)', async () => {
    const answer = await app.inject({ method: 'GET', url: '/console/assets/index-abc123.js' });
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(answer.headers['cache-control']).toContain('immutable');
    expect(answer.body).toBe('console.log("console")');
  });

  it('a missing asset is a 404 problem, not the index page', async () => {
    const answer = await app.inject({ method: 'GET', url: '/console/assets/gone.js' });
    expect(answer.statusCode).toBe(404);
    expect(answer.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(answer.body)).toMatchObject({ status: 404, code: 'not_found' });
  });

  it.each([
    '/console/../keel-console-secret.txt',
    '/console/%2e%2e/keel-console-secret.txt',
    '/console/..%2fkeel-console-secret.txt',
  ])('%s never reads outside the console folder', async (url) => {
    const answer = await app.inject({ method: 'GET', url });
    expect(answer.body).not.toContain('not for the browser');
  });

  it('without a build: 503 saying how to build it', async () => {
    const unbuilt = createGatewayHttpAdapter(join(dir, 'nothing-here')).getInstance();
    await unbuilt.ready();
    const answer = await unbuilt.inject({ method: 'GET', url: '/console' });
    await unbuilt.close();
    expect(answer.statusCode).toBe(503);
    expect(JSON.parse(answer.body)).toMatchObject({
      status: 503,
      detail: expect.stringContaining('npm run build'),
    });
  });
});
