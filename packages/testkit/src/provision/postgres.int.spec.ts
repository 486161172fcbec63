import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { MongoClient } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { eventually } from '../eventually.js';
import { localFerretDb, requestedBackend } from './local-ferretdb.js';
import { POSTGRES_URL_ENV } from './postgres.js';
import { tcpOpen } from './probes.js';

const run = promisify(execFile);
const postgresAt = new URL(process.env[POSTGRES_URL_ENV] || 'postgres://127.0.0.1:5432');
const postgresReachable =
  requestedBackend() !== 'sqlite' && (await tcpOpen(postgresAt.hostname, Number(postgresAt.port || 5432)));

/** Sequential and index scans PostgreSQL counted on the tables of a collection (`<name>_<hash>`). */
async function scansOf(databaseUrl: string, collection: string): Promise<{ seq: number; idx: number }> {
  const query = `SELECT coalesce(sum(seq_scan), 0) || ' ' || coalesce(sum(idx_scan), 0)
    FROM pg_stat_user_tables WHERE relname LIKE '${collection}\\_%'`;
  const { stdout } = await run('psql', ['-X', '-A', '-t', '-d', databaseUrl, '-c', query], {
    timeout: 10_000,
  });
  const [seq, idx] = stdout.trim().split(' ').map(Number);
  return { seq: seq ?? NaN, idx: idx ?? NaN };
}

// The database the testkit makes for FerretDB is the one deploy/ferretdb/postgresql-gin-twins.sql
// sets up, as a deployment's would: these are that file's promises, seen through FerretDB.
describe.skipIf(!postgresReachable)(
  'FerretDB on PostgreSQL (needs PostgreSQL on 127.0.0.1:5432 or KEEL_TEST_POSTGRES_URL, and no KEEL_TEST_FERRETDB_BACKEND=sqlite)',
  () => {
    it('serves `_id` lookups from an index on a log that was empty when its connections first read it', async () => {
      const ferret = await localFerretDb({ unset: 'pg-when-reachable' });
      const client = new MongoClient(ferret.url);
      try {
        expect(ferret.postgresUrl).toBeDefined();
        const databaseUrl = ferret.postgresUrl ?? '';
        const commits = client.db('scans').collection<{ _id: string; n: number }>('commits');
        await commits.insertMany([0, 1, 2].map((n) => ({ _id: `c${n}`, n })));
        // More than five runs of one prepared lookup while the table is tiny: where PostgreSQL may
        // settle on a generic plan, which no index serves, for the rest of the connection's life.
        for (let round = 0; round < 8; round++)
          expect(await commits.findOne({ _id: 'c1' })).toEqual({ _id: 'c1', n: 1 });
        const docs = Array.from({ length: 3_000 }, (_, i) => ({ _id: `d${i}`, n: i, body: 'x'.repeat(200) }));
        await commits.insertMany(docs);
        // Every counter reported before the baseline: an idle backend's counters flush within 10 s.
        const before = await eventually(
          async () => {
            const first = await scansOf(databaseUrl, 'commits');
            await new Promise((resolve) => setTimeout(resolve, 10_500));
            expect(await scansOf(databaseUrl, 'commits')).toEqual(first);
            return first;
          },
          { timeoutMs: 40_000 },
        );

        for (let i = 0; i < 50; i++) {
          expect(await commits.findOne({ _id: `d${i * 37}` })).toMatchObject({ n: i * 37 });
        }

        const after = await eventually(
          async () => {
            const now = await scansOf(databaseUrl, 'commits');
            expect(now.idx + now.seq - before.idx - before.seq).toBeGreaterThanOrEqual(50);
            return now;
          },
          { timeoutMs: 20_000, intervalMs: 250 },
        );
        expect({ sequentialScans: after.seq - before.seq, indexScans: after.idx - before.idx }).toEqual({
          sequentialScans: 0,
          indexScans: 50,
        });
      } finally {
        await client.close();
        await ferret.stop();
      }
    }, 90_000);
  },
);
