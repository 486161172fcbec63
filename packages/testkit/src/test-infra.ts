import { inject } from 'vitest';
import { MONGODB_URL_ENV, NATS_URL_ENV } from './infra-keys.js';
import { withDatabase } from './mongo-url.js';

/** Where the servers found or started by `global-setup.ts` listen. */
export interface TestInfra {
  natsUrl: string;
  mongoUrl: string;
}

/** The NATS and MongoDB URLs provided by the testkit global setup (int and e2e projects only). */
export function testInfra(): TestInfra {
  const natsUrl = injected('keelTestNatsUrl') ?? process.env[NATS_URL_ENV];
  const mongoUrl = injected('keelTestMongoUrl') ?? process.env[MONGODB_URL_ENV];
  if (!natsUrl || !mongoUrl) {
    throw new Error(
      'No test infrastructure: run this test in a vitest project whose globalSetup is ' +
        `packages/testkit/src/global-setup.ts (the "int" and "e2e" projects), or set ${NATS_URL_ENV} and ${MONGODB_URL_ENV}.`,
    );
  }
  return { natsUrl, mongoUrl };
}

/** The test MongoDB server's URL with `dbName` as its database; pass `baseUrl` to skip `testInfra()`. */
export function mongoUrlFor(dbName: string, baseUrl: string = testInfra().mongoUrl): string {
  return withDatabase(baseUrl, dbName);
}

function injected(key: 'keelTestNatsUrl' | 'keelTestMongoUrl'): string | undefined {
  try {
    return inject(key) || undefined;
  } catch {
    // Not inside a vitest worker (e.g. a process spawned by a test): fall back to the env.
    return undefined;
  }
}
