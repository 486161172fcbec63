import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import type { Server } from '@grpc/grpc-js';
import type { Options, PackageDefinition } from '@grpc/proto-loader';
import { loadSync } from '@grpc/proto-loader';
import type { ServingStatus } from 'grpc-health-check';
import { HealthImplementation, protoPath as healthProtoPath } from 'grpc-health-check';
import { DescriptorReflection } from './grpc-reflection.js';

/** A proto package a service serves: ts-proto's `*_PACKAGE_NAME` and `protobufFileName`. */
export interface GrpcServiceDefinition {
  /** e.g. `keel.pricing.v1`. */
  package: string;
  /** Path under `proto/`, e.g. `keel/pricing/v1/pricing.proto`. */
  protoFile: string;
}

/** Proto-loader settings matching the ts-proto output (camelCase keys, 64-bit integers as numbers). */
export const PROTO_LOADER_OPTIONS: Options = {
  keepCase: false,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
};

/** The gRPC health service's fully qualified name. */
export const HEALTH_SERVICE_NAME = 'grpc.health.v1.Health';

const HEALTH_PROTO_FILE = 'health/v1/health.proto';

/** The directory holding `keel/**\/*.proto` (the @keel/proto package). */
export const protoRoot = (): string => {
  const anyProto = createRequire(import.meta.url).resolve('@keel/proto/keel/events/v1/envelope.proto');
  return resolve(dirname(anyProto), '../../..');
};

/** Everything a service's gRPC server needs: the package definition for Nest, and reflection. */
export interface GrpcServing {
  definition: PackageDefinition;
  /** Reflection for `serviceNames`, from the real descriptors (not from `definition`). */
  reflection: DescriptorReflection;
  /** The packages Nest binds controllers for (health is added to the server directly). */
  packages: string[];
  /** Fully qualified names of the services served (health included); reflection describes these. */
  serviceNames: string[];
}

/** Loads the served protos together with the health proto (so reflection describes both). */
export function loadGrpcServing(services: readonly GrpcServiceDefinition[]): GrpcServing {
  const healthDir = resolve(dirname(healthProtoPath), '../..');
  const files = [HEALTH_PROTO_FILE, ...services.map((service) => service.protoFile)];
  const includeDirs = services.length > 0 ? [healthDir, protoRoot()] : [healthDir];
  const definition = loadSync(files, { ...PROTO_LOADER_OPTIONS, includeDirs });
  const packages = [...new Set(services.map((service) => service.package))];
  for (const pkg of packages) {
    if (!Object.keys(definition).some((name) => name.startsWith(`${pkg}.`))) {
      throw new Error(`gRPC package ${pkg} is not defined by ${files.join(', ')}`);
    }
  }
  const servedServices = Object.entries(definition)
    .filter(
      ([name, value]) =>
        isService(value) &&
        (name === HEALTH_SERVICE_NAME || packages.some((pkg) => name.startsWith(`${pkg}.`))),
    )
    .map(([name]) => name);
  return {
    definition,
    reflection: new DescriptorReflection(servedServices),
    packages,
    serviceNames: servedServices,
  };
}

const isService = (value: unknown): boolean =>
  typeof value === 'object' &&
  value !== null &&
  !('format' in value) &&
  Object.values(value).every((m) => typeof m === 'object' && m !== null && 'path' in m);

/** The health statuses of one server: "" (the whole server), the service name and every served service. */
export class HealthStatus {
  readonly implementation: HealthImplementation;

  constructor(private readonly names: readonly string[]) {
    this.implementation = new HealthImplementation(
      Object.fromEntries(names.map((name) => [name, 'NOT_SERVING' as const])),
    );
  }

  /** Sets every name to `status`. */
  setAll(status: ServingStatus): void {
    for (const name of this.names) this.implementation.setStatus(name, status);
  }
}

/** Adds the health service and reflection (for the served services) to Nest's grpc-js server. */
export function addHealthAndReflection(server: Server, serving: GrpcServing, health: HealthStatus): void {
  health.implementation.addToServer(server);
  serving.reflection.addToServer(server);
}

/** Stops accepting calls and lets those in progress finish; cancels the ones still open after `graceMs`. */
export function shutdownGrpcServer(server: Server, graceMs: number): Promise<'graceful' | 'forced'> {
  return new Promise((resolveShutdown) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolveShutdown('forced');
    }, graceMs);
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolveShutdown('graceful');
    });
  });
}
