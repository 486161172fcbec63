import type { OnModuleDestroy } from '@nestjs/common';
import { Injectable } from '@nestjs/common';
import type { CallContext as CallContextMessage, DeepPartial } from '@keel/proto/keel/agent/v1/agent';
import {
  AgentServiceService,
  CancelTurnRequest,
  SubmitToolResultRequest,
  CreateConversationRequest,
  DecideApprovalRequest,
  GetAgentRequest,
  GetConversationRequest,
  ListAgentsRequest,
  ListConversationsRequest,
  ListToolsRequest,
  PutAgentRequest,
  PutProviderRequest,
  PutToolRequest,
  RotateWebhookSecretRequest,
  SubmitFeedbackRequest,
  SubmitMessageRequest,
  UpdateConversationRequest,
} from '@keel/proto/keel/agent/v1/agent';
import type { Actor } from '@keel/proto/keel/events/v1/envelope';
import type { GrpcCallOptions, RequestMessages, RpcRequest, RpcResponse } from '@keel/runtime';
import { callUnary, GrpcClient } from '@keel/runtime';
import { PermissionDeniedError } from '@keel/core';
import type { Principal } from '../auth/principal.js';
import { agentCallRetrySafe } from './agent-retry-safety.js';
import { keelErrorOf } from './grpc-errors.js';

/** Where the agent's gRPC server listens unless `AGENT_GRPC_URL` says otherwise (its default port). */
export const DEFAULT_AGENT_GRPC_URL = '127.0.0.1:50052';

/** How long one agent call may take before the request is answered 503. */
export const AGENT_CALL_DEADLINE_MS = 10_000;

/**
 * The deadline of a message's submission: a burst of turns larger than the agent can start at
 * once waits in line (its client waits for the stream's first frame, or the 202) rather than being
 * answered 503 after 10 s while the agent, which took the message, commits and runs its turn
 * anyway (500 streams at once on 2 cores: up to 13 s to be accepted, 2026-11-24).
 */
export const SUBMIT_DEADLINE_MS = 30_000;

/**
 * Reconnect backoff towards the agent: grpc-js grows it to 120 s by default, so an agent that
 * restarts behind the same address would be answered 503 for up to two minutes after it is
 * back; capped, a client's retry reaches the restarted agent within seconds.
 */
const AGENT_CHANNEL_OPTIONS = {
  'grpc.initial_reconnect_backoff_ms': 250,
  'grpc.max_reconnect_backoff_ms': 2_000,
};

/** The generated keel.agent.v1.CallContext, with the actor every gateway call has. */
export interface CallContext extends CallContextMessage {
  actor: Actor;
}

type AgentService = typeof AgentServiceService;

/** The RPCs of keel.agent.v1.AgentService, by their generated (camelCase) names. */
export type AgentRpc = keyof AgentService;

/** The generated request message of `rpc`. */
export type AgentRequestOf<R extends AgentRpc> = RpcRequest<AgentService, R>;

/** The generated response message of `rpc`. */
export type AgentResponseOf<R extends AgentRpc> = RpcResponse<AgentService, R>;

/** What a call of `rpc` takes besides the CallContext; fields left out get their proto defaults. */
export type AgentCallRequest<R extends AgentRpc> = DeepPartial<Omit<AgentRequestOf<R>, 'context'>>;

/** Each RPC's request message, to fill the fields a call leaves out with their defaults. */
const REQUESTS: RequestMessages<AgentService> = {
  createConversation: CreateConversationRequest,
  getConversation: GetConversationRequest,
  listConversations: ListConversationsRequest,
  submitMessage: SubmitMessageRequest,
  decideApproval: DecideApprovalRequest,
  cancelTurn: CancelTurnRequest,
  submitToolResult: SubmitToolResultRequest,
  updateConversation: UpdateConversationRequest,
  submitFeedback: SubmitFeedbackRequest,
  putTool: PutToolRequest,
  listTools: ListToolsRequest,
  putAgent: PutAgentRequest,
  getAgent: GetAgentRequest,
  listAgents: ListAgentsRequest,
  putProvider: PutProviderRequest,
  rotateWebhookSecret: RotateWebhookSecretRequest,
};

/**
 * One unary call of keel.agent.v1.AgentService on `client`, typed by the RPC: the request's
 * left-out fields get their proto defaults. The gateway's AgentClient and the e2e tests' raw
 * client (which keeps grpc-js errors as they are) both call through it.
 */
export const callAgentRpc = <R extends AgentRpc>(
  client: GrpcClient,
  rpc: R,
  request: DeepPartial<AgentRequestOf<R>>,
  call?: GrpcCallOptions,
): Promise<AgentResponseOf<R>> => callUnary(client, AgentServiceService, REQUESTS, rpc, request, call);

/**
 * A message field of an agent answer that the contract always sets (proto3 makes every message
 * field optional): its value, or an error (answered INTERNAL) when the agent left it out.
 */
export const answered = <T>(value: T | undefined, field: string): T => {
  if (value === undefined) throw new Error(`the agent service answered without ${field}`);
  return value;
};

/**
 * The agent's address: `AGENT_GRPC_URL`, else the agent's default port on this host. Several
 * instances: `dns:///agent:50052` (every address of the name, round-robin) or a comma-separated list.
 */
export const agentAddressFromEnv = (env: NodeJS.ProcessEnv = process.env): string =>
  env.AGENT_GRPC_URL?.trim() || DEFAULT_AGENT_GRPC_URL;

/**
 * The CallContext of a request: the tenant, key, role and acting user the auth guard resolved,
 * and the request id as the correlation id. The operator acts on no tenant's conversations.
 */
export const callContextOf = (principal: Principal, requestId: string): CallContext => {
  if (principal.kind !== 'tenant') {
    throw new PermissionDeniedError('the operator key acts on no tenant; use a tenant key');
  }
  return {
    tenantId: principal.tenantId,
    actor: { keyId: principal.keyId, role: principal.role, userId: principal.userId },
    correlationId: requestId,
  };
};

/**
 * A typed client of keel.agent.v1.AgentService on its generated definition: every call carries
 * the caller's CallContext and a deadline, and a failed call becomes the KeelError the HTTP edge
 * renders.
 */
@Injectable()
export class AgentClient implements OnModuleDestroy {
  private readonly client: GrpcClient;

  constructor(address: string = agentAddressFromEnv(), deadlineMs = AGENT_CALL_DEADLINE_MS) {
    this.client = new GrpcClient(address, {
      deadlineMs,
      channelOptions: AGENT_CHANNEL_OPTIONS,
      errorOf: (failure) => keelErrorOf(failure) ?? failure,
      // Balanced over the agent's instances (AGENT_GRPC_URL: dns:///name:port or a list).
      retrySafe: agentCallRetrySafe,
    });
  }

  /** Calls `rpc` with `{ context, ...request }`; resolves its response or rejects with a KeelError. */
  call<R extends AgentRpc>(
    rpc: R,
    context: CallContext,
    request: AgentCallRequest<R> = {} as AgentCallRequest<R>,
  ): Promise<AgentResponseOf<R>> {
    const call = rpc === 'submitMessage' ? { deadlineMs: SUBMIT_DEADLINE_MS } : undefined;
    return callAgentRpc(
      this.client,
      rpc,
      { ...(request as object), context } as DeepPartial<AgentRequestOf<R>>,
      call,
    );
  }

  onModuleDestroy(): void {
    this.client.close();
  }
}
