import type { Server as HttpServer } from 'node:http';
import type { Server } from '@grpc/grpc-js';
import type { DynamicModule, INestApplicationContext, ModuleMetadata, Type } from '@nestjs/common';
import type { AbstractHttpAdapter } from '@nestjs/core';
import { NestFactory } from '@nestjs/core';
import type { GrpcOptions } from '@nestjs/microservices';
import { Transport } from '@nestjs/microservices';
import type { KeelConfig, ServiceName } from './config.js';
import { grpcAddress, loadConfig } from './config.js';
import type { GrpcServiceDefinition } from './grpc-server.js';
import { HealthStatus, addHealthAndReflection, loadGrpcServing, shutdownGrpcServer } from './grpc-server.js';
import type { Infrastructure } from './infrastructure.js';
import { createInfrastructure } from './infrastructure.js';
import type { KeelLogger } from './logger.js';
import { createLogger } from './logger.js';
import { grpcMetricsInterceptor, meterHttp, meteredInfrastructure, serveMetrics } from './metered-edges.js';
import type { HookableHttp } from './metered-edges.js';
import type { MetricsRegistry } from './metrics.js';
import { ServiceMetrics, createMetricsRegistry, processMetrics } from './metrics.js';
import { KeelRuntimeModule, PinoNestLogger } from './runtime.module.js';
import { exitOnSignal } from './shutdown.js';
import { exitOnFatalError, portInUseError } from './startup-errors.js';

/** What a service's composition root passes to `bootstrapService`. */
export interface BootstrapOptions {
  service: ServiceName;
  /** The service's Nest module; it can inject `KEEL_INFRA`, `KEEL_CONFIG`, `KEEL_LOGGER`, `KEEL_METRICS`. */
  module: Type<unknown> | DynamicModule;
  /** Proto packages whose Nest controllers this service serves, besides health and reflection. */
  grpcServices?: readonly GrpcServiceDefinition[];
  /** Serve HTTP on `PORT` with this Nest adapter too (the gateway). */
  httpAdapter?: () => AbstractHttpAdapter;
  /** Default: `loadConfig(service)`. */
  config?: KeelConfig;
  /** Default: `createLogger(service)`. */
  logger?: KeelLogger;
  /** Shared infrastructure (dev mode); its owner closes it. Default: this service connects its own. */
  infrastructure?: Infrastructure;
  /**
   * The process's registry, shared by the services of one process (dev mode); its owner adds the
   * process series. Default: a registry of this service's own, with the process series.
   */
  metrics?: MetricsRegistry;
  /** Exit the process on SIGTERM/SIGINT after a clean stop. Default true; false when the caller handles signals. */
  handleSignals?: boolean;
}

/** A started service. */
export interface RunningService {
  readonly service: ServiceName;
  readonly config: KeelConfig;
  readonly logger: KeelLogger;
  readonly infra: Infrastructure;
  readonly metrics: MetricsRegistry;
  /** `host:port` of the gRPC server. */
  readonly grpcAddress: string;
  /** Base URL of the HTTP server, when the service has one. */
  readonly httpUrl: string | undefined;
  /** Reports NOT_SERVING on gRPC health (the first shutdown step). */
  markNotServing(): void;
  /**
   * The graceful stop: health NOT_SERVING, stop accepting gRPC calls (open ones get the rest
   * of a grace period), close the Nest app (HTTP, module destroy hooks), then, if this service
   * owns its infrastructure, drain consumers, flush the outbox and close NATS and MongoDB.
   */
  stop(): Promise<void>;
}

/**
 * Starts one Keel service: connects its infrastructure, builds its Nest application with the
 * runtime providers, serves gRPC (the service's packages, `grpc.health.v1` and reflection) and,
 * for the gateway, HTTP; logs one `ready` line; and handles SIGTERM/SIGINT with a clean stop.
 */
export async function bootstrapService(options: BootstrapOptions): Promise<RunningService> {
  const { service } = options;
  // A process of its own: a setting it cannot start with is one line naming the variable.
  if (options.handleSignals ?? true) exitOnFatalError();
  const config = options.config ?? loadConfig(service);
  const logger = options.logger ?? createLogger(service, { level: config.logLevel });
  const ownsInfra = options.infrastructure === undefined;
  const infra = options.infrastructure ?? (await createInfrastructure(config, logger));
  const address = grpcAddress(config);
  const serving = loadGrpcServing(options.grpcServices ?? []);
  const health = new HealthStatus([
    '',
    service,
    ...serving.serviceNames.filter((name) => !name.startsWith('grpc.health.')),
  ]);
  let metrics = options.metrics;
  if (metrics === undefined) {
    metrics = createMetricsRegistry();
    processMetrics(metrics, service, infra.relay);
  }
  const serviceMetrics = new ServiceMetrics(metrics, service);
  // What the service's modules see: the same connections, its appends and consumers measured as its own.
  const serviceInfra = meteredInfrastructure(infra, serviceMetrics);

  let grpcServer: Server | undefined;
  type GrpcChannelOptions = NonNullable<GrpcOptions['options']['channelOptions']>;
  const grpcOptions: GrpcOptions = {
    transport: Transport.GRPC,
    options: {
      url: address,
      package: serving.packages,
      packageDefinition: serving.definition,
      gracefulShutdown: true,
      // Every call the server answers is timed, by method and status code.
      channelOptions: { interceptors: [grpcMetricsInterceptor(serviceMetrics)] } as GrpcChannelOptions,
      onLoadPackageDefinition: (_definition: unknown, server: Server) => {
        grpcServer = server;
        addHealthAndReflection(server, serving, health);
      },
    },
  };
  const root: ModuleMetadata = {
    imports: [
      KeelRuntimeModule.forService({ config, logger, infra: serviceInfra, metrics, serviceMetrics }),
      options.module,
    ],
  };
  const nestOptions = { logger: new PinoNestLogger(logger), abortOnError: false };

  let app: INestApplicationContext | undefined;
  let httpUrl: string | undefined;
  let metricsServer: HttpServer | undefined;
  try {
    if (options.httpAdapter) {
      const http = await NestFactory.create(root, options.httpAdapter(), nestOptions);
      app = http;
      meterHttp(http.getHttpAdapter().getInstance() as HookableHttp, serviceMetrics);
      http.connectMicroservice<GrpcOptions>(grpcOptions, { inheritAppConfig: true });
      await http.startAllMicroservices();
      await http.listen(config.httpPort, config.httpHost);
      const shownHost =
        config.httpHost === '0.0.0.0' || config.httpHost === '::' ? '127.0.0.1' : config.httpHost;
      httpUrl = `http://${shownHost}:${config.httpPort}`;
    } else {
      const microservice = await NestFactory.createMicroservice<GrpcOptions>(root, {
        ...grpcOptions,
        ...nestOptions,
      });
      app = microservice;
      await microservice.listen();
    }
    if (config.metricsPort !== undefined) {
      metricsServer = await serveMetrics(metrics, config.grpcHost, config.metricsPort);
    }
  } catch (error) {
    const portTaken = portInUseError(error, config);
    if (portTaken) logger.error({ variable: portTaken.variable }, `startup failed: ${portTaken.message}`);
    else logger.error({ err: error, grpcAddress: address }, 'startup failed');
    await app?.close().catch(() => undefined);
    if (ownsInfra) await infra.close().catch(() => undefined);
    throw portTaken ?? error;
  }
  const started = app;
  health.setAll('SERVING');

  let stopping: Promise<void> | undefined;
  const graceMs = Math.max(100, Math.floor(config.shutdownTimeoutMs / 3));
  const stop = async (): Promise<void> => {
    health.setAll('NOT_SERVING');
    logger.info({ step: 'not-serving' }, 'shutdown: health NOT_SERVING');
    if (grpcServer) {
      const how = await shutdownGrpcServer(grpcServer, graceMs);
      logger.info({ step: 'grpc-stopped', how }, 'shutdown: gRPC server stopped accepting calls');
    }
    await started.close();
    logger.info({ step: 'app-closed' }, 'shutdown: application closed');
    if (metricsServer) {
      const server = metricsServer;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    }
    if (ownsInfra) await infra.close();
  };

  const running: RunningService = {
    service,
    config,
    logger,
    infra,
    metrics,
    grpcAddress: address,
    httpUrl,
    markNotServing: () => health.setAll('NOT_SERVING'),
    stop: () => (stopping ??= stop()),
  };
  // Handlers first: whoever waits for the ready line may send SIGTERM the moment it appears.
  if (options.handleSignals ?? true) exitOnSignal(running.stop, logger, config.shutdownTimeoutMs);
  logger.info(
    {
      grpcAddress: address,
      ...(httpUrl ? { httpUrl } : {}),
      ...(config.metricsPort !== undefined ? { metricsPort: config.metricsPort } : {}),
      store: infra.kinds.store,
      bus: infra.kinds.bus,
      services: serving.serviceNames,
    },
    'ready',
  );
  return running;
}
