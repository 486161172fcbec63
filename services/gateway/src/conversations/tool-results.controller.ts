import { Body, Controller, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { AgentClient, callContextOf } from '../agent-client/agent.client.js';
import type { Principal } from '../auth/principal.js';
import { Caller, RequestId } from '../auth/principal.js';
import { Roles } from '../auth/roles.decorator.js';
import { parseToolResult } from './tool-results.js';

/**
 * `POST /v1/conversations/{id}/tool-results/{toolCallId}` (editor; API.md "Client tools"): the
 * connected client's answer to a client tool call, one call of the agent service. A retry with
 * the same Idempotency-Key gets the first answer from the gateway's idempotency records; any
 * other second answer is 409.
 */
@Controller('v1/conversations')
export class ToolResultsController {
  constructor(@Inject(AgentClient) private readonly agent: AgentClient) {}

  /** → 200 `{ toolCallId }`; unknown call 404; answered or past its deadline 409; off outputSchema 400. */
  @Post(':id/tool-results/:toolCallId')
  @HttpCode(200)
  @Roles('editor')
  async submit(
    @Param('id') conversationId: string,
    @Param('toolCallId') toolCallId: string,
    @Body() body: unknown,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<{ toolCallId: string }> {
    const fields = parseToolResult(body);
    const response = await this.agent.call('submitToolResult', callContextOf(caller, requestId), {
      request: { conversationId, toolCallId, ...fields },
    });
    return { toolCallId: response.toolCallId };
  }
}
