// grpc-js clients of Keel's services for end-to-end tests, promise-based: a bearer key as metadata
// per call (none when undefined), unary calls, their response headers, and SendMessage's stream.
import type { ClientReadableStream, ServiceClientConstructor, ServiceError } from '@grpc/grpc-js';
import { credentials, loadPackageDefinition, Metadata, status } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import type { DeepPartial, MessageFns } from '@keel/proto/keel/pricing/v1/pricing';
import {
  ComputeCostRequest,
  GetPriceRequest,
  ListModelsRequest,
  PricingServiceService,
  SetPriceRequest,
} from '@keel/proto/keel/pricing/v1/pricing';
import type { GrpcMethod } from '@keel/runtime';
import { GrpcClient as TypedGrpcClient, PROTO_LOADER_OPTIONS, protoRoot } from '@keel/runtime';

type Callback = (error: ServiceError | null, response?: unknown) => void;
type RawClient = Record<
  string,
  (
    request: object,
    metadata: Metadata,
    callback: Callback,
  ) => { on(event: 'metadata', listener: (m: Metadata) => void): void }
> & {
  sendMessage(request: object, metadata: Metadata): ClientReadableStream<Record<string, unknown>>;
  close(): void;
};

/** A client of `service` (e.g. `conversations.v1.ConversationService`) at `address`, metadata per call. */
export const grpcClient = (address: string, protoFile: string, service: string) => {
  const definition = loadSync(protoFile, { ...PROTO_LOADER_OPTIONS, includeDirs: [protoRoot()] });
  const [area, version, name] = service.split('.') as [string, string, string];
  const root = loadPackageDefinition(definition) as unknown as {
    keel: Record<string, Record<string, Record<string, ServiceClientConstructor>>>;
  };
  const raw = new root.keel[area]![version]![name]!(
    address,
    credentials.createInsecure(),
  ) as unknown as RawClient;
  const metadataOf = (key: string | undefined, extra: Record<string, string> = {}) => {
    const metadata = new Metadata();
    if (key !== undefined) metadata.set('authorization', `Bearer ${key}`);
    for (const [name, value] of Object.entries(extra)) metadata.set(name, value);
    return metadata;
  };
  const unary = <T = Record<string, unknown>>(
    method: string,
    key: string | undefined,
    request: object,
    extra: Record<string, string> = {},
  ): Promise<T> =>
    new Promise((resolve, reject) => {
      raw[method]!(request, metadataOf(key, extra), (error, response) =>
        error ? reject(error) : resolve(response as T),
      );
    });
  /** The response headers (initial metadata) of a unary call. */
  const headersOf = (method: string, key: string, request: object, extra: Record<string, string>) =>
    new Promise<Metadata>((resolve, reject) => {
      raw[method]!(request, metadataOf(key, extra), (error) => error && reject(error)).on(
        'metadata',
        resolve,
      );
    });
  const stream = (key: string | undefined, request: object) => raw.sendMessage(request, metadataOf(key));
  return { unary, headersOf, stream, close: () => raw.close() };
};

/** A gRPC client of one service. */
export type GrpcClient = ReturnType<typeof grpcClient>;

/** A ConversationService client on a gateway's gRPC port. */
export const conversationsClient = (address: string) =>
  grpcClient(address, 'keel/conversations/v1/conversations.proto', 'conversations.v1.ConversationService');

type PricingService = typeof PricingServiceService;
type PricingRpc = keyof PricingService;
type PricingRequestOf<R extends PricingRpc> = Parameters<PricingService[R]['requestSerialize']>[0];
type PricingResponseOf<R extends PricingRpc> = ReturnType<PricingService[R]['responseDeserialize']>;

/** Each PricingService RPC's request message, to fill the fields a test leaves out with defaults. */
const PRICING_REQUESTS: { readonly [R in PricingRpc]: MessageFns<PricingRequestOf<R>> } = {
  getPrice: GetPriceRequest,
  listModels: ListModelsRequest,
  computeCost: ComputeCostRequest,
  setPrice: SetPriceRequest,
};

/**
 * A typed PricingService client (on a gateway's port, or the pricing service's own) on the
 * generated definition: a bearer key as metadata per call (none when undefined); a failed call
 * rejects with the ServiceError.
 */
export const pricingClient = (address: string) => {
  const client = new TypedGrpcClient(address, { deadlineMs: 30_000 });
  const unary = <R extends PricingRpc>(
    rpc: R,
    key: string | undefined,
    request: DeepPartial<PricingRequestOf<R>>,
  ): Promise<PricingResponseOf<R>> => {
    const method = PricingServiceService[rpc] as unknown as GrpcMethod<
      PricingRequestOf<R>,
      PricingResponseOf<R>,
      false
    >;
    const message = PRICING_REQUESTS[rpc] as MessageFns<PricingRequestOf<R>>;
    return client.unary(method, message.fromPartial(request as never), {
      metadata: key === undefined ? {} : { authorization: `Bearer ${key}` },
    });
  };
  return { unary, close: () => client.close() };
};

/** The error a gRPC call failed with (undefined when it succeeded). */
export const failureOf = async (call: Promise<unknown>): Promise<ServiceError | undefined> => {
  try {
    await call;
    return undefined;
  } catch (error) {
    return error as ServiceError;
  }
};

/** The status code a gRPC call failed with. */
export const codeOf = async (call: Promise<unknown>): Promise<number | undefined> =>
  (await failureOf(call))?.code;

/** The status a SendMessage stream ends with (OK when it ends normally), its frames read and dropped. */
export const sendStatus = (client: GrpcClient, key: string, request: object) =>
  new Promise<{ code: number; details: string }>((resolve) => {
    const call = client.stream(key, request);
    call.on('data', () => undefined);
    call.on('error', (error: ServiceError) => resolve({ code: error.code, details: error.details }));
    call.on('end', () => resolve({ code: status.OK, details: '' }));
  });
