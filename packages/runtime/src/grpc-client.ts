// Typed gRPC calls on the ts-proto service definitions of @keel/proto (`outputServices=grpc-js`,
// see proto/buf.gen.yaml): the request and response of a call are the generated message types,
// so a changed contract breaks the compile of every caller instead of drifting in hand-kept
// mirrors. One helper holds what every client repeated: a deadline per call, metadata, and the
// mapping of a failed call to the caller's error.
import type { ChannelOptions, ClientReadableStream, ServiceError } from '@grpc/grpc-js';
import { Client, credentials, Metadata } from '@grpc/grpc-js';
import {
  grpcTargetsOf,
  isDnsTarget,
  pickChannel,
  retryOnAnother,
  ROUND_ROBIN_SERVICE_CONFIG,
} from './grpc-balancing.js';

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
  /**
   * Whether a unary call may go again to another instance after UNAVAILABLE: a read, or a write
   * that carries an idempotency key (see retryOnAnother). Default: never.
   */
  retrySafe?: (path: string, request: unknown) => boolean;
}

/** Per call: its own deadline, metadata entries to send, and a listener for the response headers. */
export interface GrpcCallOptions {
  deadlineMs?: number;
  metadata?: Readonly<Record<string, string>>;
  onHeaders?: (headers: Metadata) => void;
  /** Overrides the client's `retrySafe` for this call. */
  retrySafe?: boolean;
}

/**
 * grpc-js channels to a service's instances (see grpcTargetsOf: one address, a `dns:///` name
 * balanced round-robin, or a list) that call the RPCs of any service defined there with their
 * generated types: `unary` resolves the response, `serverStream` gives the response stream.
 * Each call goes to the next instance that is connected (one that died drops out at once); a
 * unary call that finds its instance UNAVAILABLE goes to another one when it is safe to repeat.
 */
export class GrpcClient {
  private readonly clients: Client[];
  private readonly maxAttempts: number;
  private next = 0;

  constructor(
    address: string,
    private readonly options: GrpcClientOptions,
  ) {
    const targets = grpcTargetsOf(address);
    this.clients = targets.map(
      (target) =>
        new Client(target, credentials.createInsecure(), {
          ...options.channelOptions,
          ...(isDnsTarget(target) ? { 'grpc.service_config': ROUND_ROBIN_SERVICE_CONFIG } : {}),
        }),
    );
    // A dns:/// channel moves on to another resolved address by itself on the next attempt.
    this.maxAttempts = targets.length > 1 ? targets.length : isDnsTarget(targets[0]!) ? 3 : 1;
  }

  /** Calls a unary RPC; rejects with `errorOf(failure)` when it fails (on every instance tried). */
  async unary<Request, Response>(
    method: GrpcMethod<Request, Response, false>,
    request: Request,
    call: GrpcCallOptions = {},
  ): Promise<Response> {
    const errorOf = this.options.errorOf ?? ((failure: ServiceError) => failure);
    const deadline = this.deadline(call);
    const retrySafe = call.retrySafe ?? this.options.retrySafe?.(method.path, request) ?? false;
    const tried = new Set<number>();
    for (;;) {
      const index = this.pick(tried);
      tried.add(index);
      try {
        return await this.unaryOn(this.clients[index]!, method, request, call, deadline);
      } catch (error) {
        const failure = error as ServiceError;
        const again = retryOnAnother({
          code: failure.code,
          attempts: tried.size,
          maxAttempts: this.maxAttempts,
          retrySafe,
          remainingMs: deadline.getTime() - Date.now(),
        });
        if (!again) throw errorOf(failure);
      }
    }
  }

  private unaryOn<Request, Response>(
    client: Client,
    method: GrpcMethod<Request, Response, false>,
    request: Request,
    call: GrpcCallOptions,
    deadline: Date,
  ): Promise<Response> {
    return new Promise<Response>((resolve, reject) => {
      const pending = client.makeUnaryRequest(
        method.path,
        method.requestSerialize,
        method.responseDeserialize,
        request,
        metadataOf(call.metadata),
        { deadline },
        (error, response) => {
          if (error) reject(error);
          else resolve(response as Response);
        },
      );
      if (call.onHeaders) pending.on('metadata', call.onHeaders);
    });
  }

  /** The next instance's channel, round-robin among the best-connected (see pickChannel). */
  private pick(tried: ReadonlySet<number>): number {
    if (this.clients.length === 1) return 0;
    const states = this.clients.map((c) => c.getChannel().getConnectivityState(true));
    const index = pickChannel(states, this.next, tried);
    this.next = (index + 1) % this.clients.length;
    return index;
  }

  /** Starts a server-streaming RPC; its 'error' events carry the ServiceError as grpc-js gives it. */
  serverStream<Request, Response>(
    method: GrpcMethod<Request, Response, true>,
    request: Request,
    call: GrpcCallOptions = {},
  ): ClientReadableStream<Response> {
    return this.clients[this.pick(new Set())]!.makeServerStreamRequest(
      method.path,
      method.requestSerialize,
      method.responseDeserialize,
      request,
      metadataOf(call.metadata),
      { deadline: this.deadline(call) },
    );
  }

  /** Resolves once a channel is connected, or after `ms` (whichever comes first); never rejects. */
  waitForReady(ms: number): Promise<void> {
    const deadline = new Date(Date.now() + ms);
    return Promise.race(
      this.clients.map((c) => new Promise<void>((resolve) => c.waitForReady(deadline, () => resolve()))),
    );
  }

  /** Closes the channels. */
  close(): void {
    for (const client of this.clients) client.close();
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
