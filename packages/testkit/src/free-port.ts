import { createServer } from 'node:net';

/**
 * Ports handed out come from 20000–32767, below Linux's ephemeral range (32768–60999): a port the
 * OS picked with `listen(0)` can be taken by any outgoing connection (a driver's pool) before the
 * test's server binds it. Each vitest worker walks its own slice, so parallel files do not collide,
 * from an offset drawn per process, so two test runs on one machine seldom pick the same port.
 */
const FIRST = 20_000;
const LAST = 32_767;
const SLICE = 1_500;
const worker = Number(process.env.VITEST_POOL_ID ?? process.env.VITEST_WORKER_ID ?? 0) || 0;
const sliceStart = FIRST + ((worker * SLICE) % (LAST - FIRST + 1 - SLICE));
let next = Math.floor(Math.random() * SLICE);

const bindable = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

/** A TCP port on 127.0.0.1 that was free a moment ago, for servers started by tests. */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < SLICE; tries++) {
    const port = sliceStart + (next++ % SLICE);
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port in ${sliceStart}-${sliceStart + SLICE - 1}`);
}
