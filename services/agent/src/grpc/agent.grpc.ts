import { randomBytes } from 'node:crypto';
import { NotFoundError, ValidationError, ownValue } from '@keel/core';
import type {
  AgentServiceController,
  CancelTurnRequest,
  CallContext as ProtoCallContext,
  CreateConversationRequest,
  DecideApprovalRequest,
  GetAgentRequest,
  GetAgentResponse,
  GetConversationRequest,
  ListAgentsRequest,
  ListConversationsRequest,
  ListAgentsResponse,
  ListToolsRequest,
  ListToolsResponse,
  PutAgentRequest,
  PutAgentResponse,
  PutProviderRequest,
  PutProviderResponse,
  PutToolRequest,
  PutToolResponse,
  RotateWebhookSecretRequest,
  RotateWebhookSecretResponse,
  SubmitFeedbackRequest,
  SubmitMessageRequest,
  SubmitMessageResponse,
  SubmitToolResultRequest,
  UpdateConversationRequest,
} from '@keel/proto/keel/agent/v1/agent';
import { AgentServiceControllerMethods } from '@keel/proto/keel/agent/v1/agent';
import type {
  CancelTurnResponse,
  CreateConversationResponse,
  DecideApprovalResponse,
  GetConversationResponse,
  ListConversationsResponse,
  SubmitFeedbackResponse,
  SubmitToolResultResponse,
  UpdateConversationResponse,
} from '@keel/proto/keel/conversations/v1/conversations';
import { ConversationStatus } from '@keel/proto/keel/conversations/v1/conversations';
import type { KeelLogger } from '@keel/runtime';
import { KEEL_LOGGER, SecretBox, toRpcException } from '@keel/runtime';
import { Controller, Inject } from '@nestjs/common';
import { MAX_PAGE_SIZE } from '../conversation-index/conversation-index.js';
import type { CallContext } from '../call-context.js';
import { DefaultsService } from '../models/defaults.service.js';
import { withDefaults } from '../models/agent-defaults.js';
import { ConversationService } from '../conversation/conversation.service.js';
import { TenantConfigService } from '../tenant-config/tenant-config.service.js';
import {
  agentDefinitionOf,
  agentMessage,
  clientAnswerOf,
  builtinToolMessage,
  conversationMessage,
  decisionMessage,
  decisionOf,
  MAX_FEEDBACK_COMMENT_CHARS,
  ifBusyOf,
  listFilterOf,
  ratingOf,
  summaryMessage,
  toolDefinitionOf,
  toolMessage,
} from './agent.mapping.js';
import { acceptedRequestOf } from './accepted-request.js';
import { faultAfterCommit } from './after-commit-faults.js';
import type { ServerCall } from './caller-waiting.js';
import { callerWaiting } from './caller-waiting.js';
import type { Access } from './call-context.js';
import { ADMIN, EDITOR, VIEWER, callContextOf, required } from './call-context.js';
import type { AjvToolCatalog } from './tool-catalog.provider.js';
import { TOOL_CATALOG } from './tool-catalog.provider.js';

const now = (): string => new Date().toISOString();

/**
 * keel.agent.v1.AgentService: the gateway's calls into the conversation runtime and the tenant
 * configuration. Each RPC checks the CallContext and the role, maps the request to a runtime
 * call, maps the result back, and turns errors into gRPC statuses (grpc-status.ts).
 */
@Controller()
@AgentServiceControllerMethods()
export class AgentController implements AgentServiceController {
  constructor(
    @Inject(ConversationService) private readonly conversations: ConversationService,
    @Inject(TenantConfigService) private readonly config: TenantConfigService,
    @Inject(SecretBox) private readonly secrets: SecretBox,
    @Inject(TOOL_CATALOG) private readonly catalog: AjvToolCatalog,
    @Inject(KEEL_LOGGER) private readonly logger: KeelLogger,
    @Inject(DefaultsService) private readonly defaults: DefaultsService,
  ) {}

  createConversation(request: CreateConversationRequest): Promise<CreateConversationResponse> {
    return this.call('CreateConversation', request.context, EDITOR, async (ctx) => {
      const input = request.request;
      const agentId = required(input?.agentId, 'request.agentId');
      const title = input?.title ?? '';
      const metadata = input?.metadata ?? {};
      const created = await this.conversations.create(
        ctx,
        {
          agentId,
          ...(title ? { title } : {}),
          ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
        },
        acceptedRequestOf('CreateConversation', input?.idempotencyKey, { agentId, title, metadata }),
      );
      await faultAfterCommit('CreateConversation');
      return {
        conversation: {
          id: created.id,
          agentId: created.agentId,
          title,
          status: ConversationStatus.IDLE,
          createdAt: created.createdAt,
          metadata,
          userId: ctx.userId,
        },
      };
    });
  }

  getConversation(request: GetConversationRequest): Promise<GetConversationResponse> {
    return this.call('GetConversation', request.context, VIEWER, async (ctx) => {
      const conversationId = required(request.request?.conversationId, 'request.conversationId');
      return {
        conversation: conversationMessage(await this.conversations.get(ctx.tenantId, conversationId)),
      };
    });
  }

  listConversations(request: ListConversationsRequest): Promise<ListConversationsResponse> {
    return this.call('ListConversations', request.context, VIEWER, async (ctx) => {
      const input = request.request;
      // The proto caps a larger page size rather than refusing it; 0 means the default.
      const limit = Math.min(input?.limit ?? 0, MAX_PAGE_SIZE);
      const cursor = input?.cursor ?? '';
      const page = await this.conversations.list(
        ctx.tenantId,
        { limit, ...(cursor ? { cursor } : {}) },
        listFilterOf(input),
      );
      return { data: page.conversations.map(summaryMessage), nextCursor: page.nextCursor ?? '' };
    });
  }

  /**
   * A message whose call is already cancelled or past its deadline is not committed (nothing is
   * written; the caller was told DEADLINE_EXCEEDED or CANCELLED, and the gateway answered 503): a
   * turn the caller gave up on would otherwise run, feeding the overload that made it late, and
   * its retry would start a second one.
   */
  submitMessage(
    request: SubmitMessageRequest,
    _metadata?: unknown,
    grpcCall?: ServerCall,
  ): Promise<SubmitMessageResponse> {
    return this.call('SubmitMessage', request.context, EDITOR, async (ctx) => {
      const input = request.request;
      const conversationId = required(input?.conversationId, 'request.conversationId');
      const replaceFrom = input?.replaceFrom ?? '';
      const fields = {
        content: input?.content ?? '',
        ifBusy: ifBusyOf(input?.ifBusy),
        ...(replaceFrom ? { replaceFrom } : {}),
        ...(input?.contextJson ? { contextJson: input.contextJson } : {}),
        ...(input?.userRole ? { userRole: input.userRole } : {}),
      };
      const { turnId, version } = await this.conversations.send(
        ctx,
        conversationId,
        fields,
        acceptedRequestOf('SubmitMessage', input?.idempotencyKey, fields),
        callerWaiting(grpcCall),
      );
      await faultAfterCommit('SubmitMessage');
      return { turnId, version };
    });
  }

  decideApproval(request: DecideApprovalRequest): Promise<DecideApprovalResponse> {
    return this.call('DecideApproval', request.context, EDITOR, async (ctx) => {
      const input = request.request;
      const conversationId = required(input?.conversationId, 'request.conversationId');
      const approvalId = required(input?.approvalId, 'request.approvalId');
      const decision = decisionOf(input?.decision);
      const reason = input?.reason ?? '';
      await this.conversations.decideApproval(
        ctx,
        conversationId,
        approvalId,
        { decision, ...(reason ? { reason } : {}) },
        acceptedRequestOf(`DecideApproval ${approvalId}`, input?.idempotencyKey, { decision, reason }),
      );
      await faultAfterCommit('DecideApproval');
      return { approvalId, decision: decisionMessage(decision) };
    });
  }

  cancelTurn(request: CancelTurnRequest): Promise<CancelTurnResponse> {
    return this.call('CancelTurn', request.context, EDITOR, async (ctx) => {
      const conversationId = required(request.request?.conversationId, 'request.conversationId');
      const cancelled = await this.conversations.cancel(
        ctx,
        conversationId,
        acceptedRequestOf('CancelTurn', request.request?.idempotencyKey, {}),
      );
      await faultAfterCommit('CancelTurn');
      return cancelled;
    });
  }

  updateConversation(request: UpdateConversationRequest): Promise<UpdateConversationResponse> {
    return this.call('UpdateConversation', request.context, EDITOR, async (ctx) => {
      const input = request.request;
      const conversationId = required(input?.conversationId, 'request.conversationId');
      const view = await this.conversations.update(ctx, conversationId, {
        ...(input?.title === undefined ? {} : { title: input.title }),
        ...(input?.replaceMetadata ? { metadata: { ...input.metadata } } : {}),
      });
      return { conversation: conversationMessage(view) };
    });
  }

  submitFeedback(request: SubmitFeedbackRequest): Promise<SubmitFeedbackResponse> {
    return this.call('SubmitFeedback', request.context, EDITOR, async (ctx) => {
      const input = request.request;
      const conversationId = required(input?.conversationId, 'request.conversationId');
      const messageId = required(input?.messageId, 'request.messageId');
      const rating = ratingOf(input?.rating);
      const comment = input?.comment ?? '';
      if (comment.length > MAX_FEEDBACK_COMMENT_CHARS) {
        throw new ValidationError(`comment is over ${MAX_FEEDBACK_COMMENT_CHARS} characters`, {
          field: 'comment',
        });
      }
      return this.conversations.feedback(ctx, conversationId, {
        messageId,
        rating,
        ...(comment ? { comment } : {}),
      });
    });
  }

  submitToolResult(request: SubmitToolResultRequest): Promise<SubmitToolResultResponse> {
    return this.call('SubmitToolResult', request.context, EDITOR, async (ctx) => {
      const input = request.request;
      const conversationId = required(input?.conversationId, 'request.conversationId');
      const toolCallId = required(input?.toolCallId, 'request.toolCallId');
      const answer = clientAnswerOf(input?.ok === true, input?.resultJson, input?.errorMessage);
      return this.conversations.submitToolResult(
        ctx,
        conversationId,
        { toolCallId, ...answer },
        async (tool, result) => {
          const schema = ownValue((await this.config.load(ctx.tenantId)).tools, tool)?.outputSchema;
          if (schema) this.catalog.assertResult(schema, result);
        },
      );
    });
  }

  putTool(request: PutToolRequest): Promise<PutToolResponse> {
    return this.call('PutTool', request.context, ADMIN, async (ctx) => {
      if (!request.tool) throw requiredField('tool');
      const tool = toolDefinitionOf(request.tool);
      // The decider checks the shape; only a JSON-schema compiler can say the schema works.
      this.catalog.assertToolSchema(tool.inputSchema);
      if (tool.outputSchema) this.catalog.assertOutputSchema(tool.outputSchema);
      const state = await this.config.apply(ctx, { type: 'PutTool', tool, at: now() });
      return { tool: toolMessage(ownValue(state.tools, tool.name) ?? tool) };
    });
  }

  listTools(request: ListToolsRequest): Promise<ListToolsResponse> {
    return this.call('ListTools', request.context, ADMIN, async (ctx) => {
      const { tools } = await this.config.load(ctx.tenantId);
      const own = Object.values(tools).sort((a, b) => a.name.localeCompare(b.name));
      return { data: [...this.catalog.builtins.map(builtinToolMessage), ...own.map(toolMessage)] };
    });
  }

  putAgent(request: PutAgentRequest): Promise<PutAgentResponse> {
    return this.call('PutAgent', request.context, ADMIN, async (ctx) => {
      if (!request.agent) throw requiredField('agent');
      const agent = agentDefinitionOf(request.agent);
      const state = await this.config.apply(ctx, { type: 'PutAgent', agent, at: now() });
      const defaults = await this.defaults.load(ctx.tenantId);
      return { agent: agentMessage(withDefaults(ownValue(state.agents, agent.agentId) ?? agent, defaults)) };
    });
  }

  getAgent(request: GetAgentRequest): Promise<GetAgentResponse> {
    return this.call('GetAgent', request.context, ADMIN, async (ctx) => {
      const agentId = required(request.agentId, 'agentId');
      const agent = ownValue((await this.config.load(ctx.tenantId)).agents, agentId);
      if (!agent) throw new NotFoundError(`agent ${agentId} not found`);
      return { agent: agentMessage(withDefaults(agent, await this.defaults.load(ctx.tenantId))) };
    });
  }

  listAgents(request: ListAgentsRequest): Promise<ListAgentsResponse> {
    return this.call('ListAgents', request.context, ADMIN, async (ctx) => {
      const { agents } = await this.config.load(ctx.tenantId);
      const sorted = Object.values(agents).sort((a, b) => a.agentId.localeCompare(b.agentId));
      const defaults = await this.defaults.load(ctx.tenantId);
      return { data: sorted.map((agent) => agentMessage(withDefaults(agent, defaults))) };
    });
  }

  putProvider(request: PutProviderRequest): Promise<PutProviderResponse> {
    return this.call('PutProvider', request.context, ADMIN, async (ctx) => {
      const provider = required(request.provider, 'provider');
      const apiKey = request.apiKey ?? '';
      const baseUrl = request.baseUrl ?? '';
      await this.config.apply(ctx, {
        type: 'PutProvider',
        provider,
        // The context binds the sealed key to this tenant and provider (the turn worker opens it so).
        ...(apiKey ? { apiKey: this.secrets.seal(apiKey, `${ctx.tenantId}/provider/${provider}`) } : {}),
        ...(baseUrl ? { baseUrl } : {}),
        at: now(),
      });
      return { provider, configured: true };
    });
  }

  rotateWebhookSecret(request: RotateWebhookSecretRequest): Promise<RotateWebhookSecretResponse> {
    return this.call('RotateWebhookSecret', request.context, ADMIN, async (ctx) => {
      const secret = randomBytes(32).toString('base64url');
      await this.config.apply(ctx, {
        type: 'RotateWebhookSecret',
        secret: this.secrets.seal(secret, `${ctx.tenantId}/webhook`),
        at: now(),
      });
      return { secret };
    });
  }

  /** Checks the context and role, runs the call, and maps any error to a gRPC status. */
  private async call<T>(
    rpc: string,
    context: ProtoCallContext | undefined,
    access: Access,
    run: (ctx: CallContext) => Promise<T>,
  ): Promise<T> {
    let ctx: CallContext | undefined;
    try {
      ctx = callContextOf(context, access);
      return await run(ctx);
    } catch (error) {
      throw toRpcException(error, this.logger, {
        rpc,
        ...(ctx ? { tenantId: ctx.tenantId, correlationId: ctx.correlationId } : {}),
      });
    }
  }
}

const requiredField = (field: string): ValidationError =>
  new ValidationError(`${field} is required`, { field });
