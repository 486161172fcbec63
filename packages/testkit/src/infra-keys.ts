// How global setup hands the servers' URLs over: `provide`/`inject` for test workers, env vars
// for processes those workers spawn.

declare module 'vitest' {
  export interface ProvidedContext {
    keelTestNatsUrl: string;
    keelTestMongoUrl: string;
  }
}

/** Env var through which global setup hands the NATS URL to processes spawned by tests. */
export const NATS_URL_ENV = 'KEEL_TEST_NATS_URL';
/** Env var through which global setup hands the MongoDB URL to processes spawned by tests. */
export const MONGODB_URL_ENV = 'KEEL_TEST_MONGODB_URL';
