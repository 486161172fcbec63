import type { OnModuleDestroy } from '@nestjs/common';
import { Injectable } from '@nestjs/common';
import type { DeepPartial } from '@keel/proto/keel/mcp/v1/mcp';
import {
  DeleteMcpServerRequest,
  ListMcpServersRequest,
  McpServiceService,
  PutMcpServerRequest,
  RefreshMcpServerRequest,
} from '@keel/proto/keel/mcp/v1/mcp';
import type { RequestMessages, RpcRequest, RpcResponse } from '@keel/runtime';
import { callUnary, GrpcClient } from '@keel/runtime';
import type { CallContext } from '../agent-client/agent.client.js';
import { AGENT_CALL_DEADLINE_MS, agentAddressFromEnv } from '../agent-client/agent.client.js';
import { keelErrorOf } from '../agent-client/grpc-errors.js';

type McpService = typeof McpServiceService;

/** The RPCs of keel.mcp.v1.McpService, by their generated (camelCase) names. */
export type McpRpc = keyof McpService;

type McpRequestOf<R extends McpRpc> = RpcRequest<McpService, R>;

/** What a call of `rpc` takes besides the CallContext. */
export type McpCallRequest<R extends McpRpc> = DeepPartial<Omit<McpRequestOf<R>, 'context'>>;

const REQUESTS: RequestMessages<McpService> = {
  putMcpServer: PutMcpServerRequest,
  listMcpServers: ListMcpServersRequest,
  refreshMcpServer: RefreshMcpServerRequest,
  deleteMcpServer: DeleteMcpServerRequest,
};

/**
 * A typed client of keel.mcp.v1.McpService, served by the agent (same address as AgentService):
 * every call carries the caller's CallContext and a deadline; a failed call becomes a KeelError.
 */
@Injectable()
export class McpClient implements OnModuleDestroy {
  private readonly client: GrpcClient;

  constructor(address: string = agentAddressFromEnv(), deadlineMs = AGENT_CALL_DEADLINE_MS) {
    this.client = new GrpcClient(address, {
      deadlineMs,
      channelOptions: { 'grpc.initial_reconnect_backoff_ms': 250, 'grpc.max_reconnect_backoff_ms': 2_000 },
      errorOf: (failure) => keelErrorOf(failure) ?? failure,
    });
  }

  /** Calls `rpc` with `{ context, ...request }`; resolves its response or rejects with a KeelError. */
  call<R extends McpRpc>(
    rpc: R,
    context: CallContext,
    request: McpCallRequest<R> = {} as McpCallRequest<R>,
  ): Promise<RpcResponse<McpService, R>> {
    return callUnary(this.client, McpServiceService, REQUESTS, rpc, {
      ...(request as object),
      context,
    } as DeepPartial<McpRequestOf<R>>);
  }

  onModuleDestroy(): void {
    this.client.close();
  }
}
