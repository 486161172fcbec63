import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { findExecutable } from './executables.js';
import { tcpOpen } from './probes.js';

/** Env var naming the PostgreSQL server FerretDB may use (an admin connection: it creates databases). */
export const POSTGRES_URL_ENV = 'KEEL_TEST_POSTGRES_URL';
const DEFAULT_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
/** Every database made here starts so, then the pid of the process that made it. */
const PREFIX = 'keel_ferretdb_';

/** The event trigger that gives FerretDB's btree indexes GIN twins it can query with (see the file). */
const GIN_TWINS_SQL = fileURLToPath(
  new URL('../../../../deploy/ferretdb/postgresql-gin-twins.sql', import.meta.url),
);

/** Env var: `off` makes fresh databases without the GIN twins (every query scans, as FerretDB alone). */
export const GIN_TWINS_ENV = 'KEEL_TEST_FERRETDB_GIN_TWINS';

/** A database made for one FerretDB, dropped by `drop`. */
export interface FreshDatabase {
  /** The same server as the admin URL, this database. */
  url: string;
  /** `url` without FerretDB's pool settings: what psql takes. */
  adminUrl: string;
  name: string;
  /** Whether deploy/ferretdb/postgresql-gin-twins.sql is applied (its queries use indexes). */
  ginTwins: boolean;
  drop(): Promise<void>;
}

const run = promisify(execFile);
/** Connections left for others (superuser slots, psql, another tool) when judging whether a pool fits. */
const RESERVED_CONNECTIONS = 10;

/** Env var: the most PostgreSQL connections one FerretDB may hold (default 30). */
export const POSTGRES_POOL_ENV = 'KEEL_TEST_FERRETDB_PG_POOL';
const poolSize = (): number => {
  const value = Number(process.env[POSTGRES_POOL_ENV] ?? 30);
  return Number.isInteger(value) && value > 0 ? value : 30;
};

/**
 * A fresh, empty database on the PostgreSQL server of `KEEL_TEST_POSTGRES_URL` (else
 * postgres@127.0.0.1:5432), made with psql; undefined when that server or psql is not there.
 * Databases left by processes that died before dropping theirs are dropped first.
 */
export async function freshPostgresDatabase(): Promise<FreshDatabase | undefined> {
  const adminUrl = process.env[POSTGRES_URL_ENV] || DEFAULT_POSTGRES_URL;
  const admin = new URL(adminUrl);
  const psql = await findExecutable('psql', ['/usr/bin/psql']);
  if (!psql || !(await tcpOpen(admin.hostname || '127.0.0.1', Number(admin.port || 5432)))) return undefined;
  const sql = async (statement: string): Promise<string> =>
    (
      await run(psql, ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', adminUrl, '-c', statement], {
        timeout: 15_000,
      })
    ).stdout;
  try {
    await dropOrphans(sql);
    // Several runs on one machine share the server's connections: with too few left for this
    // FerretDB's pool, its queries would fail, so the caller falls back to SQLite instead.
    const free = Number(
      (await sql(`SELECT current_setting('max_connections')::int - count(*) FROM pg_stat_activity`)).trim(),
    );
    if (!(free >= poolSize() + RESERVED_CONNECTIONS)) return undefined;
    const name = `${PREFIX}${process.pid}_${randomBytes(4).toString('hex')}`;
    await sql(`CREATE DATABASE "${name}"`);
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    const databaseUrl = url.toString();
    // As a deployment would: without it every FerretDB query on PostgreSQL scans its table
    // (KEEL_TEST_FERRETDB_GIN_TWINS=off leaves it out, to measure the difference).
    const ginTwins =
      process.env[GIN_TWINS_ENV] !== 'off' &&
      (await run(psql, ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', url.toString(), '-f', GIN_TWINS_SQL], {
        timeout: 15_000,
      }).then(
        () => true,
        () => false,
      ));
    // FerretDB opens up to ~100 connections otherwise: PostgreSQL's whole default limit, shared
    // by every test run and benchmark on the machine. Its queries wait for a free one instead.
    if (!url.searchParams.has('pool_max_conns')) url.searchParams.set('pool_max_conns', String(poolSize()));
    return {
      url: url.toString(),
      adminUrl: databaseUrl,
      name,
      ginTwins,
      drop: async () => {
        await sql(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      },
    };
  } catch {
    return undefined;
  }
}

/** Drops this prefix's databases whose making process is gone (a test run killed before teardown). */
async function dropOrphans(sql: (statement: string) => Promise<string>): Promise<void> {
  const names = (await sql(`SELECT datname FROM pg_database WHERE datname LIKE '${PREFIX}%'`))
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  for (const name of names) {
    const pid = Number(/^keel_ferretdb_(\d+)_/.exec(name)?.[1]);
    if (Number.isInteger(pid) && !processAlive(pid)) {
      await sql(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => undefined);
    }
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
