import {
  Body,
  Controller,
  Get,
  Headers,
  HttpCode,
  Inject,
  NotAcceptableException,
  Param,
  Post,
  Query,
} from '@nestjs/common';
import { AgentClient, callContextOf } from '../agent-client/agent.client.js';
import type { Principal } from '../auth/principal.js';
import { Caller, RequestId } from '../auth/principal.js';
import { Roles } from '../auth/roles.decorator.js';
import {
  parseCreateConversation,
  parseDecideApproval,
  parseListConversations,
  parseSendMessage,
} from './conversation-requests.js';
import type {
  ConversationListItem,
  ConversationListMessage,
  ConversationMessage,
  ConversationSummaryMessage,
  ConversationView,
} from './conversation-views.js';
import { conversationListView, conversationView, summaryView, wordOf } from './conversation-views.js';

/** What a streaming send is told until the turn stream is served on this route. */
export const STREAM_NOT_HERE =
  'streaming a turn from POST .../messages is not served yet: send without Accept: text/event-stream ' +
  '(202 { turnId }) and follow the turn on the events feed GET /v1/conversations/{id}/events';

/**
 * The conversation routes of API.md (editor writes, viewer reads), each one call of the agent
 * service.
 */
@Controller('v1/conversations')
export class ConversationsController {
  constructor(@Inject(AgentClient) private readonly agent: AgentClient) {}

  /** `POST /v1/conversations` `{ agentId, title?, metadata? }` → 201 `{ id, agentId, status, createdAt }`. */
  @Post()
  @HttpCode(201)
  @Roles('editor')
  async create(@Body() body: unknown, @Caller() caller: Principal, @RequestId() requestId: string) {
    const request = parseCreateConversation(body);
    const response = await this.agent.call<{ conversation: ConversationSummaryMessage }>(
      'createConversation',
      callContextOf(caller, requestId),
      { request },
    );
    return summaryView(response.conversation);
  }

  /** `GET /v1/conversations?limit=&cursor=` → 200 `{ data, nextCursor }`, newest first; bad limit or cursor: 400. */
  @Get()
  @Roles('viewer')
  async list(
    @Query('limit') limit: unknown,
    @Query('cursor') cursor: unknown,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<{ data: ConversationListItem[]; nextCursor: string | null }> {
    const request = parseListConversations({ limit, cursor });
    const response = await this.agent.call<ConversationListMessage>(
      'listConversations',
      callContextOf(caller, requestId),
      { request },
    );
    return conversationListView(response);
  }

  /** `GET /v1/conversations/{id}` → the state rebuilt from the event log; another tenant's: 404. */
  @Get(':id')
  @Roles('viewer')
  async get(
    @Param('id') conversationId: string,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<ConversationView> {
    const response = await this.agent.call<{ conversation: ConversationMessage }>(
      'getConversation',
      callContextOf(caller, requestId),
      { request: { conversationId } },
    );
    return conversationView(response.conversation);
  }

  /** `POST /v1/conversations/{id}/messages` `{ content, ifBusy? }` → 202 `{ turnId }`; busy: 409. */
  @Post(':id/messages')
  @HttpCode(202)
  @Roles('editor')
  async send(
    @Param('id') conversationId: string,
    @Body() body: unknown,
    @Headers('accept') accept: string | undefined,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<{ turnId: string }> {
    if (accept?.toLowerCase().includes('text/event-stream'))
      throw new NotAcceptableException(STREAM_NOT_HERE);
    const fields = parseSendMessage(body);
    const response = await this.agent.call<{ turnId: string }>(
      'submitMessage',
      callContextOf(caller, requestId),
      {
        request: { conversationId, ...fields },
      },
    );
    return { turnId: response.turnId };
  }

  /** `POST /v1/conversations/{id}/approvals/{approvalId}` `{ decision, reason? }` → 200; decided: 409; unknown: 404. */
  @Post(':id/approvals/:approvalId')
  @HttpCode(200)
  @Roles('editor')
  async decide(
    @Param('id') conversationId: string,
    @Param('approvalId') approvalId: string,
    @Body() body: unknown,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<{ approvalId: string; decision: string }> {
    const fields = parseDecideApproval(body);
    const response = await this.agent.call<{ approvalId: string; decision: string }>(
      'decideApproval',
      callContextOf(caller, requestId),
      { request: { conversationId, approvalId, ...fields } },
    );
    return { approvalId: response.approvalId, decision: wordOf(response.decision, 'DECISION_') };
  }

  /** `POST /v1/conversations/{id}/cancel` → 202 `{ turnId }`; no turn running: 409. */
  @Post(':id/cancel')
  @HttpCode(202)
  @Roles('editor')
  async cancel(
    @Param('id') conversationId: string,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<{ turnId: string }> {
    const response = await this.agent.call<{ turnId: string }>(
      'cancelTurn',
      callContextOf(caller, requestId),
      {
        request: { conversationId },
      },
    );
    return { turnId: response.turnId };
  }
}
