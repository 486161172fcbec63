import { execFile, spawn } from 'node:child_process';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freePort } from '../free-port.js';
import { findExecutable, isExecutableFile } from './executables.js';
import { mongoAnswersPing } from './probes.js';
import type { Provisioned } from './server.js';
import { spawnServer, waitUntilReady } from './server.js';

const BUILD_SCRIPT = fileURLToPath(new URL('../../scripts/build-ferretdb.sh', import.meta.url));

/** FerretDB (SQLite handler) on a free loopback port in a temp dir; builds the binary first if missing. */
export async function localFerretDb(): Promise<Provisioned> {
  const bin = (await findFerretDb()) ?? (await buildFerretDb());
  const [port, debugPort] = await Promise.all([freePort(), freePort()]);
  const server = await spawnServer('ferretdb', bin, (dir) => [
    '--handler=sqlite',
    '--telemetry=disable',
    `--listen-addr=127.0.0.1:${port}`,
    `--sqlite-url=file:${dir}/`,
    `--state-dir=${dir}`,
    `--debug-addr=127.0.0.1:${debugPort}`,
    '--log-level=warn',
  ]);
  const url = `mongodb://127.0.0.1:${port}/`;
  try {
    await waitUntilReady(`FerretDB (${bin})`, () => mongoAnswersPing(url, 1_000), server, 30_000);
  } catch (error) {
    await server.stop();
    throw error;
  }
  return { url, source: `FerretDB started on :${port}`, stop: () => server.stop() };
}

/** `$FERRETDB_BIN`, `ferretdb` on PATH, or the one `go install` put in GOBIN / GOPATH/bin. */
async function findFerretDb(): Promise<string | undefined> {
  const explicit = process.env.FERRETDB_BIN;
  if (explicit) return (await isExecutableFile(explicit)) ? explicit : undefined;
  return findExecutable(
    'ferretdb',
    await goBinDirs().then((dirs) => dirs.map((dir) => join(dir, 'ferretdb'))),
  );
}

async function goBinDirs(): Promise<string[]> {
  try {
    const { stdout } = await promisify(execFile)('go', ['env', 'GOBIN', 'GOPATH'], { timeout: 10_000 });
    const [gobin, gopath] = stdout.split('\n').map((line) => line.trim());
    return [gobin, gopath && join(gopath.split(':')[0] ?? gopath, 'bin')].filter(
      (dir): dir is string => !!dir,
    );
  } catch {
    return [join(homedir(), 'go', 'bin')];
  }
}

async function buildFerretDb(): Promise<string> {
  process.stderr.write(
    `[testkit] ferretdb not found; building it with ${BUILD_SCRIPT} (takes a few minutes once)\n`,
  );
  const code = await new Promise<number | null>((resolve, reject) => {
    // The script's stdout carries progress too; route both streams to our stderr.
    const child = spawn('bash', [BUILD_SCRIPT], { stdio: ['ignore', process.stderr, process.stderr] });
    child.once('error', reject);
    child.once('close', resolve);
  });
  const bin = await findFerretDb();
  if (code !== 0 || !bin) {
    throw new Error(
      `No MongoDB for tests: set MONGODB_URL, start Docker, or fix the FerretDB build (${BUILD_SCRIPT} exited ${code}).`,
    );
  }
  return bin;
}
