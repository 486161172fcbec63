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
  // The webhook and fake provider servers listen on loopback: opened on purpose, as an operator
  // would with KEEL_EGRESS_ALLOW (e2e/egress.spec.ts closes it again).
  KEEL_EGRESS_ALLOW: '127.0.0.0/8,::1/128',
  // A killed relay's lease blocks the next one for at most two windows.
  KEEL_OUTBOX_LEASE_MS: '1000',
  // The ready line is an info line.
  LOG_LEVEL: 'info',
  ...extra,
});

/** Starts `services/<service>/src/main.ts` serving gRPC on `port`; resolves once it logs ready. */
const startService = (
  service: string,
  env: Record<string, string>,
  port: number,
  name: string,
  extra: Record<string, string> = {},
): Promise<ProcessHandle> =>
  startProcess({
    name,
    entry: `services/${service}/src/main.ts`,
    env: { ...env, GRPC_PORT: String(port), ...extra },
    readyLine: /"msg":"ready"/,
  });

/** Starts an agent process serving gRPC on `port`, its OpenAI client pointed at `openaiUrl`. */
export const startAgent = (env: Record<string, string>, port: number, openaiUrl: string, name = 'agent') =>
  startService('agent', env, port, name, { OPENAI_BASE_URL: openaiUrl });

/** Starts a pricing service process serving gRPC on `port` (agents find it through PRICING_GRPC_URL). */
export const startPricing = (env: Record<string, string>, port: number, name = 'pricing') =>
  startService('pricing', env, port, name);

/** Starts an audit service process serving gRPC on `port` (the gateway's AUDIT_GRPC_URL). */
export const startAudit = (env: Record<string, string>, port: number, name = 'audit') =>
  startService('audit', env, port, name);

/** Starts a tools service process (its gRPC serves health only: on `port`, else any free one). */
export const startTools = async (env: Record<string, string>, port?: number): Promise<ProcessHandle> =>
  startService('tools', env, port ?? (await freePort()), 'tools');

/** Where a gateway process listens and what it talks to. */
export interface GatewayPorts {
  /** HTTP port. */
  port: number;
  /** gRPC port (GRPC_PORT). */
  grpcPort: number;
  /** The agent's gRPC port (AGENT_GRPC_URL). */
  agentPort: number;
}

/** Starts a gateway process on 127.0.0.1 with `operatorKey` as KEEL_OPERATOR_KEY. */
export const startGateway = (
  env: Record<string, string>,
  ports: GatewayPorts,
  operatorKey: string,
  options: { name?: string; extra?: Record<string, string> } = {},
): Promise<ProcessHandle> =>
  startService('gateway', env, ports.grpcPort, options.name ?? 'gateway', {
    PORT: String(ports.port),
    HOST: '127.0.0.1',
    KEEL_OPERATOR_KEY: operatorKey,
    AGENT_GRPC_URL: `127.0.0.1:${ports.agentPort}`,
    ...options.extra,
  });
