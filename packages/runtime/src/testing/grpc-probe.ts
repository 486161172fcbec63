// For tests: a real grpc-js client for grpc.health.v1 and server reflection, as an operator's
// tooling (grpc-health-probe, grpcurl) would call them.
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import type { Client, ServiceClientConstructor } from '@grpc/grpc-js';
import { credentials, loadPackageDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { protoPath as healthProtoPath } from 'grpc-health-check';

type Callback<T> = (error: Error | null, response?: T) => void;

interface HealthClient extends Client {
  check(
    request: { service: string },
    options: { deadline: number },
    callback: Callback<{ status: string }>,
  ): void;
}

interface ReflectionStream {
  write(request: { listServices: string }): void;
  end(): void;
  on(
    event: 'data',
    listener: (response: { listServicesResponse?: { service: { name: string }[] } }) => void,
  ): void;
  on(event: 'error', listener: (error: Error) => void): void;
}

interface ReflectionClient extends Client {
  serverReflectionInfo(): ReflectionStream;
}

const loaderOptions = { keepCase: false, enums: String, defaults: true, oneofs: true };

const lookup = (root: unknown, path: string): ServiceClientConstructor =>
  path
    .split('.')
    .reduce<unknown>(
      (node, name) => (node as Record<string, unknown>)[name],
      root,
    ) as ServiceClientConstructor;

const healthService = lookup(
  loadPackageDefinition(loadSync(healthProtoPath, loaderOptions)),
  'grpc.health.v1.Health',
);

const reflectionProto = resolve(
  dirname(createRequire(import.meta.url).resolve('@grpc/reflection')),
  '../proto/grpc/reflection/v1/reflection.proto',
);
const reflectionService = lookup(
  loadPackageDefinition(loadSync(reflectionProto, loaderOptions)),
  'grpc.reflection.v1.ServerReflection',
);

/** Calls `grpc.health.v1.Health/Check` for `service` and resolves with the status name (e.g. `SERVING`). */
export function healthCheck(address: string, service = ''): Promise<string> {
  const client = new healthService(address, credentials.createInsecure()) as unknown as HealthClient;
  return new Promise<string>((resolveStatus, reject) => {
    client.check({ service }, { deadline: Date.now() + 5_000 }, (error, response) => {
      client.close();
      if (error) reject(error);
      else resolveStatus(response?.status ?? 'UNKNOWN');
    });
  });
}

/** Lists the services a server describes through gRPC reflection (v1). */
export function reflectedServices(address: string): Promise<string[]> {
  const client = new reflectionService(address, credentials.createInsecure()) as unknown as ReflectionClient;
  return new Promise<string[]>((resolveNames, reject) => {
    const call = client.serverReflectionInfo();
    const timer = setTimeout(() => reject(new Error('no reflection answer within 5 s')), 5_000);
    call.on('data', (response) => {
      clearTimeout(timer);
      call.end();
      client.close();
      resolveNames((response.listServicesResponse?.service ?? []).map((service) => service.name).sort());
    });
    call.on('error', (error) => {
      clearTimeout(timer);
      client.close();
      reject(error);
    });
    call.write({ listServices: '*' });
  });
}
