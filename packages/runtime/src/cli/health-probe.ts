// `node packages/runtime/dist/cli/health-probe.js [host:port]`: exits 0 when the gRPC server there
// reports SERVING on grpc.health.v1, else 1. The containers' healthcheck (docker-compose.yml);
// Kubernetes uses its built-in gRPC probe instead. Default address: 127.0.0.1:$GRPC_PORT.
import type { Client, ServiceClientConstructor } from '@grpc/grpc-js';
import { credentials, loadPackageDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { protoPath } from 'grpc-health-check';

interface HealthClient extends Client {
  check(
    request: { service: string },
    options: { deadline: number },
    callback: (error: Error | null, response?: { status: string }) => void,
  ): void;
}

const definition = loadPackageDefinition(
  loadSync(protoPath, { enums: String, defaults: true }),
) as unknown as {
  grpc: { health: { v1: { Health: ServiceClientConstructor } } };
};
const address = process.argv[2] ?? `127.0.0.1:${process.env.GRPC_PORT ?? ''}`;
const client = new definition.grpc.health.v1.Health(
  address,
  credentials.createInsecure(),
) as unknown as HealthClient;
client.check({ service: '' }, { deadline: Date.now() + 3_000 }, (error, response) => {
  client.close();
  if (error) {
    process.stderr.write(`${address} unreachable: ${error.message}\n`);
    process.exit(1);
  }
  process.stdout.write(`${address} ${response?.status ?? 'UNKNOWN'}\n`);
  process.exit(response?.status === 'SERVING' ? 0 : 1);
});
