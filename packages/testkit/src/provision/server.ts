import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** One server the tests talk to, wherever it came from. */
export interface Provisioned {
  url: string;
  /** One phrase for the log line, e.g. "env NATS_URL" or "nats-server started on :4333". */
  source: string;
  /** What stores the data, where known, e.g. "FerretDB/PostgreSQL" or "FerretDB/SQLite". */
  backend?: string;
  /** FerretDB on PostgreSQL: the database it stores into (an admin URL, for psql). */
  postgresUrl?: string;
  stop(): Promise<void>;
}

/** A server process started by the testkit, with its temporary directory. */
export interface LocalServer {
  child: ChildProcess;
  dir: string;
  /** Last lines of its output, for error messages. */
  output(): string;
  stop(): Promise<void>;
}

const started = new Set<LocalServer>();

// If vitest dies without running teardown, do not leave servers and temp dirs behind.
process.once('exit', () => {
  for (const server of started) {
    server.child.kill('SIGKILL');
    rmSync(server.dir, { recursive: true, force: true });
  }
});

/** Spawns `bin args(dir)` in a fresh temp dir, keeping the tail of its output; stopped with SIGTERM then SIGKILL. */
export async function spawnServer(
  name: string,
  bin: string,
  args: (dir: string) => string[],
): Promise<LocalServer> {
  const dir = await mkdtemp(join(tmpdir(), `keel-test-${name}-`));
  const child = spawn(bin, args(dir), { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString()).slice(-4000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  child.once('error', (error) => keep(Buffer.from(`spawn ${bin}: ${error.message}\n`)));
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('close', () => resolve());
  });
  const server: LocalServer = {
    child,
    dir,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
      started.delete(server);
      await rm(dir, { recursive: true, force: true });
    },
  };
  started.add(server);
  return server;
}

/** Polls `probe` until it resolves true; fails early if `server` exits, with its output. */
export async function waitUntilReady(
  what: string,
  probe: () => Promise<boolean>,
  server: LocalServer | undefined,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (
      server &&
      (server.child.exitCode !== null || server.child.signalCode !== null || server.child.pid === undefined)
    ) {
      throw new Error(`${what} exited before it was ready:\n${server.output()}`);
    }
    if (await probe()) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${what} not ready within ${timeoutMs} ms${server ? `:\n${server.output()}` : ''}`);
}
