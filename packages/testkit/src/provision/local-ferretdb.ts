import { execFile, spawn } from 'node:child_process';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freePort } from '../free-port.js';
import { findExecutable, isExecutableFile } from './executables.js';
import { mongoAnswersPing } from './probes.js';
import { freshPostgresDatabase, POSTGRES_URL_ENV } from './postgres.js';
import type { Provisioned } from './server.js';
import { spawnServer, waitUntilReady } from './server.js';

const BUILD_SCRIPT = fileURLToPath(new URL('../../scripts/build-ferretdb.sh', import.meta.url));

/** Env var choosing FerretDB's backend: `pg` (PostgreSQL, required) or `sqlite`; unset, pg when reachable. */
export const FERRETDB_BACKEND_ENV = 'KEEL_TEST_FERRETDB_BACKEND';

/** Which backend to start, as `KEEL_TEST_FERRETDB_BACKEND` asks (`auto` when unset). */
export function requestedBackend(): 'pg' | 'sqlite' | 'auto' {
  const value = (process.env[FERRETDB_BACKEND_ENV] ?? '').trim().toLowerCase();
  if (value === '' || value === 'auto') return 'auto';
  if (value === 'pg' || value === 'postgresql' || value === 'sqlite')
    return value === 'sqlite' ? 'sqlite' : 'pg';
  throw new Error(`${FERRETDB_BACKEND_ENV}=${value}: expected pg or sqlite`);
}

/**
 * FerretDB on a free loopback port with a temp state dir; builds the binary first if missing.
 * Its backend is PostgreSQL (a fresh database, dropped on stop) whenever that server is reachable
 * (`KEEL_TEST_POSTGRES_URL`, else 127.0.0.1:5432), SQLite in the temp dir otherwise; PostgreSQL
 * serves queries from indexes, SQLite scans. `KEEL_TEST_FERRETDB_BACKEND=pg|sqlite` forces one;
 * unset, `options.unset` says which (PostgreSQL when reachable, unless it says `sqlite`).
 */
export async function localFerretDb(
  options: { unset?: 'pg-when-reachable' | 'sqlite' } = {},
): Promise<Provisioned> {
  const requested = requestedBackend();
  const bin = (await findFerretDb()) ?? (await buildFerretDb());
  const tryPostgres = requested === 'pg' || (requested === 'auto' && options.unset !== 'sqlite');
  const database = tryPostgres ? await freshPostgresDatabase() : undefined;
  if (requested === 'pg' && !database) {
    throw new Error(
      `${FERRETDB_BACKEND_ENV}=pg but no PostgreSQL answered with connections to spare (set ${POSTGRES_URL_ENV}, or start it; psql must be installed)`,
    );
  }
  const [port, debugPort] = await Promise.all([freePort(), freePort()]);
  const server = await spawnServer('ferretdb', bin, (dir) => [
    ...(database
      ? ['--handler=postgresql', `--postgresql-url=${database.url}`]
      : ['--handler=sqlite', `--sqlite-url=file:${dir}/`]),
    '--telemetry=disable',
    `--listen-addr=127.0.0.1:${port}`,
    `--state-dir=${dir}`,
    `--debug-addr=127.0.0.1:${debugPort}`,
    '--log-level=warn',
  ]);
  const stop = async (): Promise<void> => {
    try {
      await server.stop();
    } finally {
      await database?.drop();
    }
  };
  const url = `mongodb://127.0.0.1:${port}/`;
  try {
    await waitUntilReady(`FerretDB (${bin})`, () => mongoAnswersPing(url, 1_000), server, 30_000);
  } catch (error) {
    await stop();
    throw error;
  }
  const backend = database ? 'FerretDB/PostgreSQL' : 'FerretDB/SQLite';
  const twins = database?.ginTwins
    ? ', GIN twins of its indexes'
    : database
      ? ', no GIN twins (every query scans)'
      : '';
  const where = database ? `, database ${database.name}${twins}` : '';
  const source = `${backend} started on :${port}${where}`;
  return { url, backend, source, stop, ...(database ? { postgresUrl: database.adminUrl } : {}) };
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
