// Typed gRPC calls on the ts-proto service definitions of @keel/proto (`outputServices=grpc-js`,
// see proto/buf.gen.yaml): the request and response of a call are the generated message types,
// so a changed contract breaks the compile of every caller instead of drifting in hand-kept
// mirrors. One helper holds what every client repeated: a deadline per call, metadata, and the
// mapping of a failed call to the caller's error.
import type { ChannelOptions, ClientReadableStream, ServiceError } from '@grpc/grpc-js';
import { Client, credentials, Metadata } from '@grpc/grpc-js';

/** One RPC of a generated service definition, e.g. `PricingServiceService.computeCost`. */
export interface GrpcMethod<Request, Response, ResponseStream extends boolean = boolean> {
  readonly path: string;
  readonly requestStream: false;
  readonly responseStream: ResponseStream;
  readonly requestSerialize: (value: Request) => Buffer;
  readonly responseDeserialize: (value: Buffer) => Response;
}

/** How a client calls: its channel, its deadline per call, and what a failed call becomes. */
export interface GrpcClientOptions {
  /** Deadline of each call unless the call gives its own. */
  deadlineMs: number;
  /** grpc-js channel options (e.g. reconnect backoff caps). */
  channelOptions?: ChannelOptions;
  /** The error a failed call rejects with; the ServiceError itself when absent. */
  errorOf?: (failure: ServiceError) => Error;
}

/** Per call: its own deadline, metadata entries to send, and a listener for the response headers. */
export interface GrpcCallOptions {
  deadlineMs?: number;
  metadata?: Readonly<Record<string, string>>;
  onHeaders?: (headers: Metadata) => void;
}

/**
 * A grpc-js channel to one address that calls the RPCs of any service defined there with their
 * generated types: `unary` resolves the response, `serverStream` gives the response stream.
 */
export class GrpcClient {
  private readonly client: Client;

  constructor(
    address: string,
    private readonly options: GrpcClientOptions,
  ) {
    this.client = new Client(address, credentials.createInsecure(), options.channelOptions);
  }

  /** Calls a unary RPC; rejects with `errorOf(failure)` when it fails. */
  unary<Request, Response>(
    method: GrpcMethod<Request, Response, false>,
    request: Request,
    call: GrpcCallOptions = {},
  ): Promise<Response> {
    const errorOf = this.options.errorOf ?? ((failure: ServiceError) => failure);
    return new Promise<Response>((resolve, reject) => {
      const pending = this.client.makeUnaryRequest(
        method.path,
        method.requestSerialize,
        method.responseDeserialize,
        request,
        metadataOf(call.metadata),
        { deadline: this.deadline(call) },
        (error, response) => {
          if (error) reject(errorOf(error));
          else resolve(response as Response);
        },
      );
      if (call.onHeaders) pending.on('metadata', call.onHeaders);
    });
  }

  /** Starts a server-streaming RPC; its 'error' events carry the ServiceError as grpc-js gives it. */
  serverStream<Request, Response>(
    method: GrpcMethod<Request, Response, true>,
    request: Request,
    call: GrpcCallOptions = {},
  ): ClientReadableStream<Response> {
    return this.client.makeServerStreamRequest(
      method.path,
      method.requestSerialize,
      method.responseDeserialize,
      request,
      metadataOf(call.metadata),
      { deadline: this.deadline(call) },
    );
  }

  /** Resolves once the channel is connected, or after `ms` (whichever comes first); never rejects. */
  waitForReady(ms: number): Promise<void> {
    return new Promise((resolve) => this.client.waitForReady(new Date(Date.now() + ms), () => resolve()));
  }

  /** Closes the channel. */
  close(): void {
    this.client.close();
  }

  private deadline(call: GrpcCallOptions): Date {
    return new Date(Date.now() + (call.deadlineMs ?? this.options.deadlineMs));
  }
}

const metadataOf = (entries: Readonly<Record<string, string>> = {}): Metadata => {
  const metadata = new Metadata();
  for (const [key, value] of Object.entries(entries)) metadata.set(key, value);
  return metadata;
};

/** The request message of the RPC `R` of a generated service definition `S`. */
export type RpcRequest<S, R extends keyof S> = S[R] extends { requestSerialize: (value: infer Q) => Buffer }
  ? Q
  : never;

/** The response message of the RPC `R` of a generated service definition `S`. */
export type RpcResponse<S, R extends keyof S> = S[R] extends {
  responseDeserialize: (value: Buffer) => infer P;
}
  ? P
  : never;

/** Per RPC of a service, its generated request message: its fromPartial fills what a call leaves out. */
export type RequestMessages<S, R extends keyof S = keyof S> = {
  readonly [K in R]: { fromPartial(object: never): RpcRequest<S, K> };
};

/**
 * Calls the unary `rpc` of a generated service definition with the request filled by its
 * message's fromPartial (fields left out get their proto defaults): what each typed client of a
 * service wraps, with its own table of request messages.
 */
export const callUnary = <S, R extends keyof S>(
  client: GrpcClient,
  service: S,
  requests: RequestMessages<S, R>,
  rpc: R,
  request: unknown,
  call?: GrpcCallOptions,
): Promise<RpcResponse<S, R>> => {
  const method = service[rpc] as unknown as GrpcMethod<RpcRequest<S, R>, RpcResponse<S, R>, false>;
  return client.unary(method, requests[rpc].fromPartial(request as never), call);
};
