import type { OnModuleDestroy } from '@nestjs/common';
import { Injectable } from '@nestjs/common';
import type { DeepPartial } from '@keel/proto/keel/models/v1/models';
import {
  GetDefaultsRequest,
  GetModelAccessRequest,
  ModelsServiceService,
  PutDefaultsRequest,
} from '@keel/proto/keel/models/v1/models';
import type { RequestMessages, RpcRequest, RpcResponse } from '@keel/runtime';
import { callUnary, GrpcClient } from '@keel/runtime';
import type { CallContext } from '../agent-client/agent.client.js';
import { AGENT_CALL_DEADLINE_MS, agentAddressFromEnv } from '../agent-client/agent.client.js';
import { keelErrorOf } from '../agent-client/grpc-errors.js';

type ModelsService = typeof ModelsServiceService;

/** The RPCs of keel.models.v1.ModelsService, by their generated (camelCase) names. */
export type ModelsRpc = keyof ModelsService;

type ModelsRequestOf<R extends ModelsRpc> = RpcRequest<ModelsService, R>;

/** What a call of `rpc` takes besides the CallContext. */
export type ModelsCallRequest<R extends ModelsRpc> = DeepPartial<Omit<ModelsRequestOf<R>, 'context'>>;

const REQUESTS: RequestMessages<ModelsService> = {
  getModelAccess: GetModelAccessRequest,
  putDefaults: PutDefaultsRequest,
  getDefaults: GetDefaultsRequest,
};

/**
 * A typed client of keel.models.v1.ModelsService, served by the agent (same address as
 * AgentService): every call carries the caller's CallContext and a deadline; a failed call
 * becomes a KeelError.
 */
@Injectable()
export class ModelsClient implements OnModuleDestroy {
  private readonly client: GrpcClient;

  constructor(address: string = agentAddressFromEnv(), deadlineMs = AGENT_CALL_DEADLINE_MS) {
    this.client = new GrpcClient(address, {
      deadlineMs,
      channelOptions: { 'grpc.initial_reconnect_backoff_ms': 250, 'grpc.max_reconnect_backoff_ms': 2_000 },
      errorOf: (failure) => keelErrorOf(failure) ?? failure,
    });
  }

  /** Calls `rpc` with `{ context, ...request }`; resolves its response or rejects with a KeelError. */
  call<R extends ModelsRpc>(
    rpc: R,
    context: CallContext,
    request: ModelsCallRequest<R> = {} as ModelsCallRequest<R>,
  ): Promise<RpcResponse<ModelsService, R>> {
    return callUnary(this.client, ModelsServiceService, REQUESTS, rpc, {
      ...(request as object),
      context,
    } as DeepPartial<ModelsRequestOf<R>>);
  }

  onModuleDestroy(): void {
    this.client.close();
  }
}
