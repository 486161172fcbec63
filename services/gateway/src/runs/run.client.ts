import type { OnModuleDestroy } from '@nestjs/common';
import { Injectable } from '@nestjs/common';
import type { DeepPartial } from '@keel/proto/keel/run/v1/run';
import {
  CancelRunRequest,
  DeleteTeamRequest,
  GetRunRequest,
  GetTeamRequest,
  ListRunsRequest,
  ListTeamsRequest,
  PutTeamRequest,
  RunServiceService,
  StartRunRequest,
} from '@keel/proto/keel/run/v1/run';
import type { RequestMessages, RpcRequest, RpcResponse } from '@keel/runtime';
import { callUnary, GrpcClient } from '@keel/runtime';
import type { CallContext } from '../agent-client/agent.client.js';
import { AGENT_CALL_DEADLINE_MS, agentAddressFromEnv } from '../agent-client/agent.client.js';
import { keelErrorOf } from '../agent-client/grpc-errors.js';

type RunService = typeof RunServiceService;

/** The RPCs of keel.run.v1.RunService, by their generated (camelCase) names. */
export type RunRpc = keyof RunService;

type RunRequestOf<R extends RunRpc> = RpcRequest<RunService, R>;

/** What a call of `rpc` takes besides the CallContext. */
export type RunCallRequest<R extends RunRpc> = DeepPartial<Omit<RunRequestOf<R>, 'context'>>;

const REQUESTS: RequestMessages<RunService> = {
  putTeam: PutTeamRequest,
  getTeam: GetTeamRequest,
  listTeams: ListTeamsRequest,
  deleteTeam: DeleteTeamRequest,
  startRun: StartRunRequest,
  getRun: GetRunRequest,
  listRuns: ListRunsRequest,
  cancelRun: CancelRunRequest,
};

/**
 * A typed client of keel.run.v1.RunService, served by the agent (same address as AgentService):
 * every call carries the caller's CallContext and a deadline; a failed call becomes a KeelError.
 */
@Injectable()
export class RunClient implements OnModuleDestroy {
  private readonly client: GrpcClient;

  constructor(address: string = agentAddressFromEnv(), deadlineMs = AGENT_CALL_DEADLINE_MS) {
    this.client = new GrpcClient(address, {
      deadlineMs,
      channelOptions: { 'grpc.initial_reconnect_backoff_ms': 250, 'grpc.max_reconnect_backoff_ms': 2_000 },
      errorOf: (failure) => keelErrorOf(failure) ?? failure,
    });
  }

  /** Calls `rpc` with `{ context, ...request }`; resolves its response or rejects with a KeelError. */
  call<R extends RunRpc>(
    rpc: R,
    context: CallContext,
    request: RunCallRequest<R> = {} as RunCallRequest<R>,
  ): Promise<RpcResponse<RunService, R>> {
    return callUnary(this.client, RunServiceService, REQUESTS, rpc, {
      ...(request as object),
      context,
    } as DeepPartial<RunRequestOf<R>>);
  }

  onModuleDestroy(): void {
    this.client.close();
  }
}
