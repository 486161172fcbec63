/**
 * Vitest globalSetup of the `int` and `e2e` projects: finds NATS (JetStream) and a
 * MongoDB-compatible server, in this order: NATS_URL / MONGODB_URL; Docker via testcontainers;
 * local (nats-server on :4222 or started here, FerretDB started here: on PostgreSQL when reachable,
 * else SQLite; see provision/local-ferretdb.ts). Logs which store backend the run uses.
 * Hands the URLs to workers via `provide` and to spawned processes via KEEL_TEST_* env vars.
 */
import type { TestProject } from 'vitest/node';
import { dockerAvailable, mongoContainer, natsContainer } from './provision/docker.js';
import { localFerretDb } from './provision/local-ferretdb.js';
import { localNats } from './provision/local-nats.js';
import type { Provisioned } from './provision/server.js';
import { MONGODB_URL_ENV, NATS_URL_ENV } from './infra-keys.js';

interface Infra {
  nats: Provisioned;
  mongo: Provisioned;
}

interface Shared {
  users: number;
  infra: Promise<Infra>;
}

// Each project loads this file separately; the servers are shared through the one main process.
const SHARED = Symbol.for('@keel/testkit/global-setup');
const registry = globalThis as { [SHARED]?: Shared };

/** Provides the test infrastructure to `project` and returns the teardown that stops what was started. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const shared = (registry[SHARED] ??= { users: 0, infra: provision() });
  shared.users++;
  let infra: Infra;
  try {
    infra = await shared.infra;
  } catch (error) {
    if (--shared.users === 0) delete registry[SHARED];
    throw error;
  }
  project.provide('keelTestNatsUrl', infra.nats.url);
  project.provide('keelTestMongoUrl', infra.mongo.url);
  process.env[NATS_URL_ENV] = infra.nats.url;
  process.env[MONGODB_URL_ENV] = infra.mongo.url;

  return async () => {
    if (--shared.users > 0) return;
    delete registry[SHARED];
    await Promise.all([infra.nats.stop(), infra.mongo.stop()]);
  };
}

async function provision(): Promise<Infra> {
  const fromEnv = (name: string): Provisioned | undefined => {
    const url = process.env[name];
    return url ? { url, source: `env ${name}`, stop: async () => {} } : undefined;
  };
  const envNats = fromEnv('NATS_URL');
  const envMongo = fromEnv('MONGODB_URL');
  const docker = envNats && envMongo ? false : await dockerAvailable();

  const [nats, mongo] = await Promise.allSettled([
    envNats ?? (docker ? natsContainer() : localNats()),
    // SQLite unless KEEL_TEST_FERRETDB_BACKEND=pg: on PostgreSQL the int project passes and its
    // process-heavy files ran 1.3-1.9x faster, but e2e/turn-stream's agent did not start within 30 s
    // there on a loaded machine (unexplained yet), so the default waits (provision/local-ferretdb.ts).
    envMongo ?? (docker ? mongoContainer() : localFerretDb({ unset: 'sqlite' })),
  ]);
  if (nats.status === 'rejected' || mongo.status === 'rejected') {
    await Promise.all([nats, mongo].map((r) => (r.status === 'fulfilled' ? r.value.stop() : undefined)));
    const reasons = [nats, mongo].flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    throw new AggregateError(
      reasons,
      `testkit: could not provide test infrastructure: ${reasons.map(String).join('; ')}`,
    );
  }
  console.log(
    `[testkit] NATS ${redact(nats.value.url)} (${nats.value.source}); MongoDB ${redact(mongo.value.url)} (${mongo.value.source}); ` +
      `store backend: ${mongo.value.backend ?? 'as the server at that URL has it'}`,
  );
  return { nats: nats.value, mongo: mongo.value };
}

/** Hides the password of a connection string before it is logged. */
function redact(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@/]*@/, '//$1:***@');
}
