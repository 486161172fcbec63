import { Body, Controller, HttpCode, Inject, Param, Patch, Post } from '@nestjs/common';
import { AgentClient, answered, callContextOf } from '../agent-client/agent.client.js';
import type { Principal } from '../auth/principal.js';
import { Caller, RequestId } from '../auth/principal.js';
import { Roles } from '../auth/roles.decorator.js';
import { parseFeedback, parseUpdateConversation } from './conversation-management-requests.js';
import type { ConversationView } from './conversation-views.js';
import { conversationView } from './conversation-views.js';

/**
 * API.md "Conversation management" writes besides DELETE (editor): PATCH a conversation's title
 * and metadata, rate a message. Each is one call of the agent service, which owns the log.
 */
@Controller('v1/conversations')
export class ConversationManagementController {
  constructor(@Inject(AgentClient) private readonly agent: AgentClient) {}

  /**
   * `PATCH /v1/conversations/{id}` `{ title?, metadata? }` → 200 the conversation; the change is
   * the durable event `conversation.updated`. A bad field: 400 naming it, nothing written.
   */
  @Patch(':id')
  @HttpCode(200)
  @Roles('editor')
  async update(
    @Param('id') conversationId: string,
    @Body() body: unknown,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<ConversationView> {
    const fields = parseUpdateConversation(body);
    const response = await this.agent.call('updateConversation', callContextOf(caller, requestId), {
      request: { conversationId, ...fields },
    });
    return conversationView(answered(response.conversation, 'conversation'));
  }

  /**
   * `POST /v1/conversations/{id}/messages/{messageId}/feedback` `{ rating, comment? }` → 200
   * `{ messageId, rating }`; the latest rating is on the message in GET and counts in usage.
   * A message not in the conversation: 404.
   */
  @Post(':id/messages/:messageId/feedback')
  @HttpCode(200)
  @Roles('editor')
  async feedback(
    @Param('id') conversationId: string,
    @Param('messageId') messageId: string,
    @Body() body: unknown,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<{ messageId: string; rating: string }> {
    const fields = parseFeedback(body);
    const response = await this.agent.call('submitFeedback', callContextOf(caller, requestId), {
      request: { conversationId, messageId, ...fields },
    });
    return { messageId: response.messageId, rating: response.rating };
  }
}
