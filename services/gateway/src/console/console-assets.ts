// The operator console's built files (packages/console/dist, `npm run build`) served by the
// gateway itself at /console (API.md "Operator console"): no second server. A page path the
// files do not have answers index.html (the console routes in the browser); a missing asset is
// 404. Nothing here reads a key: the console sends it on its API calls, never in a URL.
import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** Where `npm run build` puts the console, from this file in src/ or dist/ alike. */
export const defaultConsoleDir = (): string =>
  fileURLToPath(new URL('../../../../packages/console/dist/', import.meta.url));

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
  '.map': 'application/json',
};

/**
 * The console's own code only: scripts and styles from /console, API calls to this origin, no
 * framing. Inline style attributes are allowed (the charts set them).
 */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

/** What a request under /console is answered with. */
type Resolved = { kind: 'file'; path: string } | { kind: 'index' } | { kind: 'missing' };

/**
 * The file `rest` (the path after /console/) names inside `dir`, or index.html for a page path.
 * A path leaving `dir` (`..`, encoded or not) is treated as a page path: it never reads outside.
 */
const resolve = async (dir: string, rest: string): Promise<Resolved> => {
  const relative = normalize(rest).replace(/^([/\\])+/, '');
  if (relative === '' || relative === '.' || relative.startsWith('..') || relative.includes(`${sep}..`)) {
    return { kind: 'index' };
  }
  const path = join(dir, relative);
  if (!path.startsWith(dir)) return { kind: 'index' };
  const found = await stat(path).catch(() => undefined);
  if (found?.isFile()) return { kind: 'file', path };
  // A built asset that is not there is a 404; any other path is one of the console's pages.
  return relative.startsWith(`assets${sep}`) || extname(relative) !== ''
    ? { kind: 'missing' }
    : { kind: 'index' };
};

const sendProblem = (reply: FastifyReply, status: number, detail: string) =>
  reply
    .code(status)
    .header('content-type', 'application/problem+json; charset=utf-8')
    .send(
      JSON.stringify({
        type: 'about:blank',
        title: status === 404 ? 'Not Found' : 'Service Unavailable',
        status,
        detail,
        code: status === 404 ? 'not_found' : 'unavailable',
      }),
    );

/**
 * Serves the console from `dir` at `/console` and `/console/…` (with or without the trailing
 * slash: the router ignores it). Built assets (hashed names) are cached for a year, index.html
 * never. Without a build: 503 saying how to build it.
 */
export const serveConsole = (instance: FastifyInstance, dir: string): void => {
  const root = dir.endsWith(sep) ? dir : `${dir}${sep}`;
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const rest = (request.params as { '*'?: string })['*'] ?? '';
    const resolved = await resolve(root, rest);
    if (resolved.kind === 'missing')
      return sendProblem(
        reply,
        404,
        `${request.url.split('?', 1)[0]?.slice(0, 100)} is not part of the console`,
      );
    const path = resolved.kind === 'file' ? resolved.path : join(root, 'index.html');
    const body = await readFile(path).catch(() => undefined);
    if (body === undefined) {
      return sendProblem(
        reply,
        503,
        'the console is not built: run `npm run build` (or `npm run build -w @keel/console`)',
      );
    }
    const immutable = resolved.kind === 'file' && path.startsWith(join(root, 'assets'));
    return reply
      .headers(SECURITY_HEADERS)
      .header('content-type', CONTENT_TYPES[extname(path)] ?? 'application/octet-stream')
      .header('cache-control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
      .send(body);
  };
  instance.get('/console', handler);
  instance.get('/console/*', handler);
};
