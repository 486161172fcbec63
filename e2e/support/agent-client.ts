// A grpc-js client of keel.agent.v1.AgentService for end-to-end tests, promise-based.
import type { ServiceClientConstructor } from '@grpc/grpc-js';
import { credentials, loadPackageDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { PROTO_LOADER_OPTIONS, protoRoot } from '@keel/runtime';

type Callback = (error: (Error & { code?: number }) | null, response?: unknown) => void;
type RawClient = Record<string, (request: object, callback: Callback) => void> & { close(): void };

/** The caller identity the gateway would send with each internal call. */
export interface TestCaller {
  tenantId: string;
  role?: 'admin' | 'editor' | 'viewer';
  userId?: string;
}

/** A promise-based AgentService client; every call takes the caller it acts for. */
export const agentClient = (address: string) => {
  const definition = loadSync('keel/agent/v1/agent.proto', {
    ...PROTO_LOADER_OPTIONS,
    enums: String,
    includeDirs: [protoRoot()],
  });
  const root = loadPackageDefinition(definition) as unknown as {
    keel: { agent: { v1: { AgentService: ServiceClientConstructor } } };
  };
  const raw = new root.keel.agent.v1.AgentService(
    address,
    credentials.createInsecure(),
  ) as unknown as RawClient;
  const call = <T = Record<string, unknown>>(
    method: string,
    caller: TestCaller,
    request: object = {},
  ): Promise<T> =>
    new Promise((resolve, reject) => {
      const context = {
        tenantId: caller.tenantId,
        actor: {
          keyId: `key-${caller.role ?? 'admin'}`,
          role: caller.role ?? 'admin',
          userId: caller.userId ?? 'tester',
        },
        correlationId: `e2e-${method}-${Date.now()}`,
      };
      raw[method]!({ context, ...request }, (error, response) =>
        error ? reject(error) : resolve(response as T),
      );
    });
  return { call, close: () => raw.close() };
};
