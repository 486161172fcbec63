import type { Client, ServiceClientConstructor, ServiceError } from '@grpc/grpc-js';
import { credentials, loadPackageDefinition, Metadata } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import type { OnModuleDestroy } from '@nestjs/common';
import { Injectable } from '@nestjs/common';
import { PROTO_LOADER_OPTIONS, protoRoot } from '@keel/runtime';
import { PermissionDeniedError } from '@keel/core';
import type { Principal } from '../auth/principal.js';
import { keelErrorOf } from './grpc-errors.js';

/** Where the agent's gRPC server listens unless `AGENT_GRPC_URL` says otherwise (its default port). */
export const DEFAULT_AGENT_GRPC_URL = '127.0.0.1:50052';

/** How long one agent call may take before the request is answered 503. */
export const AGENT_CALL_DEADLINE_MS = 10_000;

/**
 * Reconnect backoff towards the agent: grpc-js grows it to 120 s by default, so an agent that
 * restarts behind the same address would be answered 503 for up to two minutes after it is
 * back; capped, a client's retry reaches the restarted agent within seconds.
 */
const AGENT_CHANNEL_OPTIONS = {
  'grpc.initial_reconnect_backoff_ms': 250,
  'grpc.max_reconnect_backoff_ms': 2_000,
};

/** The CallContext of keel.agent.v1 (proto field names in camelCase, as proto-loader takes them). */
export interface CallContext {
  tenantId: string;
  actor: { keyId: string; role: string; userId: string };
  correlationId: string;
}

/** The unary RPCs of keel.agent.v1.AgentService the gateway calls (proto-loader's camelCase names). */
export type AgentRpc =
  | 'createConversation'
  | 'getConversation'
  | 'listConversations'
  | 'submitMessage'
  | 'decideApproval'
  | 'cancelTurn'
  | 'putTool'
  | 'listTools'
  | 'putAgent'
  | 'getAgent'
  | 'listAgents'
  | 'putProvider'
  | 'rotateWebhookSecret';

type Callback = (error: ServiceError | null, response?: unknown) => void;
type Unary = (request: object, metadata: Metadata, options: { deadline: Date }, callback: Callback) => void;

/** The agent's address: `AGENT_GRPC_URL`, else the agent's default port on this host. */
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
 * A promise-based grpc-js client of keel.agent.v1.AgentService: every call carries the caller's
 * CallContext and a deadline, and a failed call becomes the KeelError the HTTP edge renders.
 */
@Injectable()
export class AgentClient implements OnModuleDestroy {
  private readonly client: Client;

  constructor(
    address: string = agentAddressFromEnv(),
    private readonly deadlineMs = AGENT_CALL_DEADLINE_MS,
  ) {
    const definition = loadSync('keel/agent/v1/agent.proto', {
      ...PROTO_LOADER_OPTIONS,
      includeDirs: [protoRoot()],
    });
    const root = loadPackageDefinition(definition) as unknown as {
      keel: { agent: { v1: { AgentService: ServiceClientConstructor } } };
    };
    this.client = new root.keel.agent.v1.AgentService(
      address,
      credentials.createInsecure(),
      AGENT_CHANNEL_OPTIONS,
    );
  }

  /** Calls `rpc` with `{ context, ...request }`; resolves its response or rejects with a KeelError. */
  call<T>(rpc: AgentRpc, context: CallContext, request: object = {}): Promise<T> {
    const method = (this.client as unknown as Record<string, Unary>)[rpc];
    if (!method) return Promise.reject(new Error(`AgentService has no RPC ${rpc}`));
    const deadline = new Date(Date.now() + this.deadlineMs);
    return new Promise<T>((resolve, reject) => {
      method.call(this.client, { context, ...request }, new Metadata(), { deadline }, (error, response) => {
        if (error) reject(keelErrorOf(error) ?? error);
        else resolve(response as T);
      });
    });
  }

  onModuleDestroy(): void {
    this.client.close();
  }
}
