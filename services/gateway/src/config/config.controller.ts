import { Body, Controller, Get, HttpCode, Inject, Param, Post, Put } from '@nestjs/common';
import { AgentClient, answered, callContextOf } from '../agent-client/agent.client.js';
import type { Principal } from '../auth/principal.js';
import { Caller, RequestId } from '../auth/principal.js';
import { Roles } from '../auth/roles.decorator.js';
import { parsePutAgent, parsePutProvider, parsePutTool } from './config-requests.js';
import type { AgentView, ToolView } from './config-views.js';
import { agentView, toolView } from './config-views.js';
import { objectWith } from './request-fields.js';
import { ModelsClient } from '../models/models.client.js';

/** The tenant configuration routes of API.md (admin): providers, tools, agents, webhook secret. */
@Controller('v1')
@Roles('admin')
export class ConfigController {
  constructor(
    @Inject(AgentClient) private readonly agent: AgentClient,
    @Inject(ModelsClient) private readonly models: ModelsClient,
  ) {}

  /** `PUT /v1/providers/{provider}` `{ apiKey?, baseUrl? }` → `{ provider, configured: true }`; the key is never echoed. */
  @Put('providers/:provider')
  async putProvider(
    @Param('provider') provider: string,
    @Body() body: unknown,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<{ provider: string; configured: boolean }> {
    const request = parsePutProvider(provider, body);
    const response = await this.agent.call('putProvider', callContextOf(caller, requestId), request);
    return { provider: response.provider, configured: response.configured };
  }

  /** `PUT /v1/tools/{name}` → the stored tool. */
  @Put('tools/:name')
  async putTool(
    @Param('name') name: string,
    @Body() body: unknown,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<ToolView> {
    const tool = parsePutTool(name, body);
    const response = await this.agent.call('putTool', callContextOf(caller, requestId), {
      tool,
    });
    return toolView(answered(response.tool, 'tool'));
  }

  /** `GET /v1/tools` → the built-ins (`builtin: true`) and the tenant's tools. */
  @Get('tools')
  async listTools(
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<{ data: ToolView[] }> {
    const response = await this.agent.call('listTools', callContextOf(caller, requestId));
    return { data: (response.data ?? []).map(toolView) };
  }

  /** `PUT /v1/agents/{agentId}` → the stored agent; a tool the tenant does not have is 400 naming it. */
  @Put('agents/:agentId')
  async putAgent(
    @Param('agentId') agentId: string,
    @Body() body: unknown,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<AgentView> {
    const context = callContextOf(caller, requestId);
    const { defaults } = await this.models.call('getDefaults', context);
    const agent = parsePutAgent(agentId, body, defaults);
    const response = await this.agent.call('putAgent', context, {
      agent,
    });
    return agentView(answered(response.agent, 'agent'));
  }

  /** `GET /v1/agents` → the tenant's agents, ordered by id. */
  @Get('agents')
  async listAgents(
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<{ data: AgentView[] }> {
    const response = await this.agent.call('listAgents', callContextOf(caller, requestId));
    return { data: (response.data ?? []).map(agentView) };
  }

  /** `GET /v1/agents/{agentId}` → one agent; unknown: 404. */
  @Get('agents/:agentId')
  async getAgent(
    @Param('agentId') agentId: string,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<AgentView> {
    const response = await this.agent.call('getAgent', callContextOf(caller, requestId), {
      agentId,
    });
    return agentView(answered(response.agent, 'agent'));
  }

  /** `POST /v1/webhook-secret` → 201 `{ secret }`, shown once; calling again rotates it. */
  @Post('webhook-secret')
  @HttpCode(201)
  async rotateWebhookSecret(
    @Body() body: unknown,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<{ secret: string }> {
    // No body, or `{}`; a JSON `null` (or anything else) is refused like on every other route.
    if (body !== undefined) parseEmpty(body);
    const response = await this.agent.call('rotateWebhookSecret', callContextOf(caller, requestId));
    return { secret: response.secret };
  }
}

const parseEmpty = (body: unknown): void => {
  objectWith(body, []);
};
