export { bootstrapService } from './bootstrap-service.js';
export type { BootstrapOptions, RunningService } from './bootstrap-service.js';
export {
  ConfigError,
  DEFAULT_GRPC_PORTS,
  LOG_LEVELS,
  SERVICE_NAMES,
  grpcAddress,
  loadConfig,
} from './config.js';
export type { KeelConfig, LogLevel, ServiceName } from './config.js';
export { checkEnv, envVar, readEnv } from './env/env-check.js';
export type { EnvKind, EnvValue } from './env/env-kinds.js';
export { ENV_VARS, TEST_ONLY_PREFIX } from './env/env-vars.js';
export type { EnvReaders, EnvVar } from './env/env-vars.js';
export { callUnary, GrpcClient } from './grpc-client.js';
export type {
  GrpcCallOptions,
  GrpcClientOptions,
  GrpcMethod,
  RequestMessages,
  RpcRequest,
  RpcResponse,
} from './grpc-client.js';
export { HEALTH_SERVICE_NAME, PROTO_LOADER_OPTIONS, loadGrpcServing, protoRoot } from './grpc-server.js';
export type { GrpcServiceDefinition, GrpcServing } from './grpc-server.js';
export { INTERNAL_ERROR_MESSAGE, grpcStatusOf, toRpcException } from './grpc-status.js';
export type { GrpcErrorStatus } from './grpc-status.js';
export { createInfrastructure } from './infrastructure.js';
export type { Infrastructure, InfrastructureKinds } from './infrastructure.js';
export type { ConversationErasure } from './erasure.js';
export { conversationKeyStream } from './erasure.js';
export { REDACTED_PATHS, createLogger, withLogContext } from './logger.js';
export type { KeelLogger, LogContext } from './logger.js';
export { ServiceMetrics, createMetrics, createMetricsRegistry, processMetrics } from './metrics.js';
export type { MetricsRegistry, ModelCallOutcome, TokenUsage, TurnOutcome } from './metrics.js';
export {
  grpcMetricsInterceptor,
  meterHttp,
  meteredBus,
  meteredInfrastructure,
  meteredStore,
  serveMetrics,
} from './metered-edges.js';
export { probeReadiness } from './readiness.js';
export type { ProbeResult, ReadinessReport } from './readiness.js';
export { KeelRuntimeModule, PinoNestLogger } from './runtime.module.js';
export type { RuntimeProviders } from './runtime.module.js';
export { SHUTDOWN_SIGNALS, exitOnSignal } from './shutdown.js';
export { exitOnFatalError, portInUseError } from './startup-errors.js';
export { KEEL_CONFIG, KEEL_INFRA, KEEL_LOGGER, KEEL_METRICS, KEEL_SERVICE_METRICS } from './tokens.js';
export { TrackingEventBus } from './tracking-bus.js';
export { SecretBox } from './secrets/secret-box.js';
export * from './egress/index.js';
export { egressPolicyFromEnv } from './egress/egress-env.js';
export { EgressDeniedError, createEgressFetch, egressDeniedIn } from './egress/guarded-fetch.js';
export type { EgressFetchOptions, EgressResolver } from './egress/guarded-fetch.js';
