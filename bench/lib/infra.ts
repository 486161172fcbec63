import { randomBytes } from 'node:crypto';
import { Socket } from 'node:net';
import { MongoEventStore } from '@keel/core/mongodb';
// The testkit finds or starts the servers for tests; it does not export its provisioning from the
// package entry (that entry pulls in vitest), so the benchmarks import the two modules directly.
import { localFerretDb } from '../../packages/testkit/src/provision/local-ferretdb.js';
import { localNats } from '../../packages/testkit/src/provision/local-nats.js';
import type { Provisioned } from '../../packages/testkit/src/provision/server.js';

/** The servers every benchmark of one run talks to. */
export interface BenchInfra {
  natsUrl: string;
  mongoUrl: string;
  /** Where each came from, e.g. "env MONGODB_URL" or "FerretDB started on :40123". */
  natsSource: string;
  mongoSource: string;
  /** What stores the data: "FerretDB/PostgreSQL", "FerretDB/SQLite", or unknown for MONGODB_URL. */
  mongoBackend: string;
  /** Server versions as they report themselves, for the results file. */
  natsVersion: string;
  mongoVersion: string;
  stop(): Promise<void>;
}

/**
 * NATS and MongoDB for a benchmark run: `NATS_URL` / `MONGODB_URL` when set, else the testkit's
 * local provisioning (nats-server on :4222 or a fresh one; a fresh FerretDB in a temp dir, on
 * PostgreSQL when reachable, else SQLite; `KEEL_TEST_FERRETDB_BACKEND=pg|sqlite` forces one).
 * NATS is only provisioned when `needNats`, so the store benchmarks run without it.
 */
export async function provisionInfra(needNats: boolean): Promise<BenchInfra> {
  const fromEnv = (name: string): Provisioned | undefined => {
    const url = process.env[name];
    return url ? { url, source: `env ${name}`, stop: async () => {} } : undefined;
  };
  const mongo = fromEnv('MONGODB_URL') ?? (await localFerretDb());
  let nats: Provisioned | undefined;
  try {
    nats = needNats ? (fromEnv('NATS_URL') ?? (await localNats())) : undefined;
  } catch (error) {
    await mongo.stop();
    throw error;
  }
  const [mongoVersion, natsVersion] = await Promise.all([
    mongoServerVersion(mongo.url),
    nats ? natsServerVersion(nats.url) : Promise.resolve('not used'),
  ]);
  return {
    natsUrl: nats?.url ?? '',
    mongoUrl: mongo.url,
    natsSource: nats?.source ?? 'not used',
    mongoSource: mongo.source,
    mongoBackend: mongo.backend ?? `unknown (MONGODB_URL's server)`,
    natsVersion,
    mongoVersion,
    stop: async () => {
      await Promise.all([mongo.stop(), nats?.stop()]);
    },
  };
}

/** "PostgreSQL", "SQLite" or "unknown": the backend in one word, for notes that depend on it. */
export const backendWord = (infra: BenchInfra): 'PostgreSQL' | 'SQLite' | 'unknown' =>
  infra.mongoBackend.includes('PostgreSQL')
    ? 'PostgreSQL'
    : infra.mongoBackend.includes('SQLite')
      ? 'SQLite'
      : 'unknown';

/** A fresh name for a benchmark's database, collection or NATS stream. */
export const freshName = (prefix: string): string => `${prefix}_${randomBytes(5).toString('hex')}`;

/** Connects a `MongoEventStore` to a fresh database; `drop` removes the database and closes. */
export async function freshStore(
  infra: BenchInfra,
  prefix: string,
): Promise<{ store: MongoEventStore; drop(): Promise<void> }> {
  const store = await MongoEventStore.connect(infra.mongoUrl, { dbName: freshName(prefix) });
  return {
    store,
    drop: async () => {
      try {
        await store.db.dropDatabase();
      } finally {
        await store.close();
      }
    },
  };
}

async function mongoServerVersion(url: string): Promise<string> {
  const store = await MongoEventStore.connect(url, { dbName: freshName('bench_probe') });
  try {
    const info = await store.db.admin().command({ buildInfo: 1 });
    return typeof info.ferretdbVersion === 'string'
      ? `FerretDB ${info.ferretdbVersion} (reports MongoDB ${String(info.version)})`
      : `MongoDB ${String(info.version)}`;
  } finally {
    await store.db.dropDatabase().catch(() => undefined);
    await store.close();
  }
}

/** Reads the INFO line a NATS server sends on connect (no client library needed for that). */
function natsServerVersion(url: string, timeoutMs = 2_000): Promise<string> {
  let hostname = '127.0.0.1';
  let port = 4222;
  try {
    const first = new URL((url.split(',')[0] ?? url).trim().replace(/^(nats|tls):/, 'http:'));
    hostname = first.hostname || hostname;
    port = Number(first.port || port);
  } catch {
    return Promise.resolve('unknown');
  }
  return new Promise((resolve) => {
    const socket = new Socket();
    let buffer = '';
    const done = (version: string): void => {
      socket.destroy();
      resolve(version);
    };
    socket.setTimeout(timeoutMs, () => done('unknown'));
    socket.once('error', () => done('unknown'));
    socket.on('data', (chunk) => {
      buffer += chunk.toString();
      const end = buffer.indexOf('\r\n');
      if (end < 0) return;
      try {
        const info = JSON.parse(buffer.slice(0, end).replace(/^INFO\s+/, '')) as {
          version?: string;
          jetstream?: boolean;
        };
        done(`nats-server ${info.version ?? 'unknown'}${info.jetstream ? ' (JetStream)' : ''}`);
      } catch {
        done('unknown');
      }
    });
    socket.connect(port, hostname);
  });
}
