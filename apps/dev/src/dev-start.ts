import type { Infrastructure, KeelLogger, RunningService } from '@keel/runtime';
import { DEV_EGRESS_ALLOW } from '@keel/runtime/egress';
import { AgentClient, generateApiKey } from '@keel/gateway';
import { devBanner } from './dev-banner.js';
import type { DevMasterKeyOrigin } from './dev-master-key.js';
import { DEV_KEY_FILE, resolveDevKey } from './dev-key.js';
import { devModelFrom } from './dev-model.js';
import { ensureDevSetup } from './dev-setup.js';

type Env = Record<string, string | undefined>;

/**
 * Gives the dev mode an operator key when `KEEL_OPERATOR_KEY` is unset (a random one, printed in
 * the banner), before the gateway reads it. Returns whether it made one up.
 */
export const ensureDevOperatorKey = (env: Env = process.env): boolean => {
  if (env.KEEL_OPERATOR_KEY?.trim()) return false;
  env.KEEL_OPERATOR_KEY = generateApiKey().replace(/^keel_/, 'keel_op_');
  return true;
};

/**
 * Opens loopback to the calls tenants aim (webhooks, provider baseUrl) in the dev mode, so a
 * webhook on this machine works: `KEEL_EGRESS_ALLOW=127.0.0.0/8,::1/128` unless the variable is
 * set (an empty value opens nothing). Returns the banner's line on it.
 */
export const ensureDevEgressAllow = (env: Env = process.env): string => {
  const set = env.KEEL_EGRESS_ALLOW;
  if (set === undefined) {
    env.KEEL_EGRESS_ALLOW = DEV_EGRESS_ALLOW;
    return `public addresses and loopback ${DEV_EGRESS_ALLOW} (the dev default; set KEEL_EGRESS_ALLOW to change it)`;
  }
  return set.trim() === ''
    ? 'public addresses only (KEEL_EGRESS_ALLOW is empty)'
    : `public addresses and ${set.trim()} (KEEL_EGRESS_ALLOW)`;
};

/**
 * Points the in-process services at each other's gRPC ports (`AGENT_GRPC_URL`, `AUDIT_GRPC_URL`,
 * `PRICING_GRPC_URL` on loopback) unless those are set, so moving a port moves its callers too.
 */
export const pointServicesAtEachOther = (
  grpcPortOf: (service: 'agent' | 'audit' | 'pricing') => number,
  env: Env = process.env,
): void => {
  for (const service of ['agent', 'audit', 'pricing'] as const) {
    const name = `${service.toUpperCase()}_GRPC_URL`;
    if (!env[name]?.trim()) env[name] = `127.0.0.1:${grpcPortOf(service)}`;
  }
};

/**
 * The dev mode's first-start work once every service serves: the dev tenant, its admin key and
 * the demo agent (found again on a persisted store), then the banner on stderr.
 */
export async function announceDevMode(options: {
  running: readonly RunningService[];
  infrastructure: Infrastructure;
  logger: KeelLogger;
  startedAt: number;
  operatorKeyMadeUp: boolean;
  /** What tenant-aimed calls may reach (`ensureDevEgressAllow`). */
  egress?: string;
  /** Where the master key came from (`ensureDevMasterKey`) and the file that keeps a made-up one. */
  masterKey?: { origin: DevMasterKeyOrigin; file: string };
  env?: Env;
}): Promise<void> {
  const env = options.env ?? process.env;
  const { running, infrastructure, logger } = options;
  const gateway = running.find((service) => service.service === 'gateway');
  const agentService = running.find((service) => service.service === 'agent');
  if (!gateway?.httpUrl || !agentService)
    throw new Error('dev mode: the gateway and the agent must be running');
  const persisted = infrastructure.kinds.store !== 'memory';
  const devKey = await resolveDevKey({
    pinned: env.KEEL_DEV_KEY?.trim() || undefined,
    persisted,
    file: env.KEEL_DEV_KEY_FILE?.trim() || DEV_KEY_FILE,
  });
  const { model, reason } = devModelFrom(env);
  const agent = new AgentClient(agentService.grpcAddress);
  try {
    const setup = await ensureDevSetup({ store: infrastructure.store, agent, key: devKey.key, model });
    logger.info(
      { tenantId: setup.tenantId, keyId: setup.keyId, agentId: setup.agentId, model, created: setup.created },
      'dev tenant ready',
    );
    process.stderr.write(
      devBanner({
        url: gateway.httpUrl,
        // A wildcard listen address is dialled on loopback.
        grpcAddress: gateway.grpcAddress.replace(/^(0\.0\.0\.0|\[::\]):/, '127.0.0.1:'),
        store: infrastructure.kinds.store,
        bus: infrastructure.kinds.bus,
        readyMs: Date.now() - options.startedAt,
        operatorKey: env.KEEL_OPERATOR_KEY ?? '',
        operatorKeyMadeUp: options.operatorKeyMadeUp,
        devKey,
        setup,
        modelReason: reason,
        ...(options.egress === undefined ? {} : { egress: options.egress }),
        ...(options.masterKey === undefined ? {} : { masterKey: options.masterKey }),
        warnings: infrastructure.warnings ?? [],
      }),
    );
  } finally {
    agent.onModuleDestroy();
  }
}
