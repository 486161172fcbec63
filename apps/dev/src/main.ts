// `npm start`: the dev mode. All five services in this one process, each with its own Nest
// application and gRPC port, sharing one store and one bus (in memory unless MONGODB_URL /
// NATS_URL are set). Services still meet only through gRPC and events, as when run apart.
import { AGENT_GRPC_SERVICES, AgentModule } from '@keel/agent/module';
import { AUDIT_GRPC_SERVICES, AuditModule } from '@keel/audit/module';
import { PRICING_GRPC_SERVICES, PricingModule } from '@keel/pricing/module';
import type { BootstrapOptions, RunningService, ServiceName } from '@keel/runtime';
import {
  bootstrapService,
  createInfrastructure,
  createLogger,
  createMetricsRegistry,
  exitOnFatalError,
  exitOnSignal,
  loadConfig,
  processMetrics,
} from '@keel/runtime';
import { ToolsModule } from '@keel/tools/module';
import {
  createGatewayHttpAdapter,
  defaultConsoleDir,
  GATEWAY_GRPC_SERVICES,
  GatewayModule,
} from '@keel/gateway';
import {
  announceDevMode,
  ensureDevEgressAllow,
  ensureDevOperatorKey,
  pointServicesAtEachOther,
} from './dev-start.js';
import { ensureConsoleBuilt } from './dev-console.js';
import { devMasterKeyFile, ensureDevMasterKey } from './dev-master-key.js';

const services: Omit<BootstrapOptions, 'config' | 'logger' | 'infrastructure' | 'handleSignals'>[] = [
  {
    service: 'gateway',
    module: GatewayModule,
    httpAdapter: createGatewayHttpAdapter,
    grpcServices: GATEWAY_GRPC_SERVICES,
  },
  { service: 'agent', module: AgentModule, grpcServices: AGENT_GRPC_SERVICES },
  { service: 'tools', module: ToolsModule },
  { service: 'audit', module: AuditModule, grpcServices: AUDIT_GRPC_SERVICES },
  { service: 'pricing', module: PricingModule, grpcServices: PRICING_GRPC_SERVICES },
];

// GRPC_PORT is the gateway's; the others take <SERVICE>_GRPC_PORT or their defaults (50052..50055).
// METRICS_PORT too: the one registry of this process holds every service's series.
const configFor = (service: ServiceName) =>
  loadConfig(
    service,
    service === 'gateway' ? process.env : { ...process.env, GRPC_PORT: undefined, METRICS_PORT: undefined },
  );

// A setting the platform cannot start with (a port in use, a malformed variable) is one line naming it.
exitOnFatalError();
// One master key for the whole process: the agent seals secrets that the tools service opens.
// Without KEEL_MASTER_KEY the dev mode makes one up; on a persisted store it is kept beside the
// dev key (.keel/master-key), so that the secrets sealed with it still open after a restart.
const masterKeyFile = devMasterKeyFile(process.env.KEEL_DEV_KEY_FILE?.trim() || undefined);
const masterKey = await ensureDevMasterKey({
  persisted: configFor('gateway').mongodbUrl !== undefined,
  file: masterKeyFile,
});
// The dev mode prints keys: it listens on loopback only unless HOST says otherwise.
process.env.HOST ??= '127.0.0.1';
// The gateway and the agent find the agent, audit and pricing at the ports this process gives them.
pointServicesAtEachOther((service) => configFor(service).grpcPort);
// Without KEEL_OPERATOR_KEY the dev mode makes one up too, and prints it with the dev tenant's key.
const startedAt = Date.now() - process.uptime() * 1000;
const operatorKeyMadeUp = ensureDevOperatorKey();
// Webhooks and provider baseUrls on this machine work in the dev mode: loopback is opened unless
// KEEL_EGRESS_ALLOW says otherwise (before the agent and tools services read it).
const egress = ensureDevEgressAllow();

// The operator console the gateway serves at /console: built now when a fresh clone has no build.
const consoleBuilt = ensureConsoleBuilt(defaultConsoleDir());

const gatewayConfig = configFor('gateway');
const logger = createLogger('dev', { level: gatewayConfig.logLevel });
const infrastructure = await createInfrastructure(gatewayConfig, logger);
// One registry for the five: the gateway's /metrics shows each service's series under its own
// `service` label, and the process's own (Node.js, the outbox relay) under service="dev".
const metrics = createMetricsRegistry();
processMetrics(metrics, 'dev', infrastructure.relay);
const running: RunningService[] = [];
// Before the first ready line: a SIGTERM then stops whatever has started, cleanly.
exitOnSignal(
  async () => {
    for (const service of running) service.markNotServing();
    await Promise.all(running.map((service) => service.stop()));
    await infrastructure.close();
  },
  logger,
  gatewayConfig.shutdownTimeoutMs,
);
try {
  for (const options of services) {
    const config = configFor(options.service);
    const serviceLogger = createLogger(options.service, { level: config.logLevel });
    running.push(
      await bootstrapService({
        ...options,
        config,
        logger: serviceLogger,
        infrastructure,
        metrics,
        handleSignals: false,
      }),
    );
  }
} catch (error) {
  await Promise.all(running.map((service) => service.stop()));
  await infrastructure.close();
  throw error;
}

const url = running[0]?.httpUrl ?? '';
logger.info(
  {
    url,
    grpc: Object.fromEntries(running.map((service) => [service.service, service.grpcAddress])),
    store: infrastructure.kinds.store,
    bus: infrastructure.kinds.bus,
  },
  `dev mode ready: ${url} (try ${url}/healthz, ${url}/readyz, ${url}/metrics)`,
);
const consoleBuild = await consoleBuilt;
if (consoleBuild.built) logger.info({ dir: consoleBuild.dir }, 'operator console built');
if (consoleBuild.error)
  logger.warn({ err: consoleBuild.error }, 'operator console not built: /console answers 503');
// The dev tenant, its admin key and the demo agent (found again on a persisted store), then the banner.
await announceDevMode({
  running,
  infrastructure,
  logger,
  startedAt,
  operatorKeyMadeUp,
  egress,
  masterKey: { origin: masterKey, file: masterKeyFile },
});
