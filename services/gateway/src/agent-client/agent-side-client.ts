import type { OnModuleDestroy } from '@nestjs/common';
import type { DeepPartial } from '@keel/proto/keel/agent/v1/agent';
import type { RequestMessages, RpcRequest, RpcResponse } from '@keel/runtime';
import { callUnary, GrpcClient } from '@keel/runtime';
import type { CallContext } from './agent.client.js';
import { AGENT_CALL_DEADLINE_MS, agentAddressFromEnv } from './agent.client.js';
import { keelErrorOf } from './grpc-errors.js';

/** What a call of `rpc` of the service `S` takes besides the CallContext. */
export type ContextCallRequest<S, R extends keyof S> = DeepPartial<Omit<RpcRequest<S, R>, 'context'>>;

/**
 * A typed client of one more service the agent serves beside AgentService (same address):
 * every call carries the caller's CallContext and a deadline, and a failed call becomes the
 * KeelError the HTTP edge renders. Nothing is retried on another instance: these calls carry no
 * key that would make a repeat safe.
 */
export class AgentSideClient<S> implements OnModuleDestroy {
  readonly #client: GrpcClient;

  constructor(
    private readonly service: S,
    private readonly requests: RequestMessages<S>,
    address: string = agentAddressFromEnv(),
    deadlineMs = AGENT_CALL_DEADLINE_MS,
  ) {
    this.#client = new GrpcClient(address, {
      deadlineMs,
      channelOptions: { 'grpc.initial_reconnect_backoff_ms': 250, 'grpc.max_reconnect_backoff_ms': 2_000 },
      errorOf: (failure) => keelErrorOf(failure) ?? failure,
    });
  }

  /** Calls `rpc` with `{ context, ...request }`; resolves its response or rejects with a KeelError. */
  call<R extends keyof S>(
    rpc: R,
    context: CallContext,
    request: ContextCallRequest<S, R> = {} as ContextCallRequest<S, R>,
  ): Promise<RpcResponse<S, R>> {
    return callUnary(this.#client, this.service, this.requests, rpc, { ...(request as object), context });
  }

  onModuleDestroy(): void {
    this.#client.close();
  }
}
