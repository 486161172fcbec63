// Starting the platform's processes for end-to-end tests: one environment per test file (its own
// database, JetStream stream and subjects, master key), agents and tools as separate processes.
import { SecretBox } from '@keel/runtime';
import type { ProcessHandle } from '@keel/testkit';
import { freePort, mongoUrlFor, startProcess, testInfra, uniqueName } from '@keel/testkit';

/** The environment every process of one test file shares. */
export const platformEnv = (name: string, extra: Record<string, string> = {}): Record<string, string> => ({
  MONGODB_URL: mongoUrlFor(uniqueName(name)),
  NATS_URL: testInfra().natsUrl,
  KEEL_NATS_STREAM: uniqueName(name).toUpperCase(),
  KEEL_SUBJECT_PREFIX: `t.${uniqueName(name)}`,
  KEEL_MASTER_KEY: SecretBox.generateKey(),
  OPENAI_API_KEY: 'sk-test-e2e',
  // A killed relay's lease blocks the next one for at most two windows.
  KEEL_OUTBOX_LEASE_MS: '1000',
  // The ready line is an info line.
  LOG_LEVEL: 'info',
  ...extra,
});

/** Starts an agent process serving gRPC on `port`, its OpenAI client pointed at `openaiUrl`. */
export const startAgent = (env: Record<string, string>, port: number, openaiUrl: string, name = 'agent') =>
  startProcess({
    name,
    entry: 'services/agent/src/main.ts',
    env: { ...env, GRPC_PORT: String(port), OPENAI_BASE_URL: openaiUrl },
    readyLine: /"msg":"ready"/,
  });

/** Starts a tools service process. */
export const startTools = async (env: Record<string, string>): Promise<ProcessHandle> =>
  startProcess({
    name: 'tools',
    entry: 'services/tools/src/main.ts',
    env: { ...env, GRPC_PORT: String(await freePort()) },
    readyLine: /"msg":"ready"/,
  });
