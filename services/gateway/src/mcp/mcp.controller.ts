import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Put } from '@nestjs/common';
import { answered, callContextOf } from '../agent-client/agent.client.js';
import type { Principal } from '../auth/principal.js';
import { Caller, RequestId } from '../auth/principal.js';
import { Roles } from '../auth/roles.decorator.js';
import { objectWith } from '../config/request-fields.js';
import { McpClient } from './mcp.client.js';
import type { McpServerView } from './mcp-requests.js';
import { mcpServerView, parsePutMcpServer } from './mcp-requests.js';

/** `/v1/mcp-servers` (API.md "Tool sources and policies"), admin only. */
@Controller('v1/mcp-servers')
@Roles('admin')
export class McpServersController {
  constructor(@Inject(McpClient) private readonly mcp: McpClient) {}

  /** `PUT /v1/mcp-servers/{name}` → the server with the tools it listed; unreachable or not MCP: 400 with the reason. */
  @Put(':name')
  async put(
    @Param('name') name: string,
    @Body() body: unknown,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<McpServerView> {
    const request = parsePutMcpServer(name, body);
    const response = await this.mcp.call('putMcpServer', callContextOf(caller, requestId), request);
    return mcpServerView(answered(response.server, 'server'));
  }

  /** `GET /v1/mcp-servers` → the tenant's servers ordered by name. */
  @Get()
  async list(
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<{ data: McpServerView[] }> {
    const response = await this.mcp.call('listMcpServers', callContextOf(caller, requestId));
    return { data: response.data.map(mcpServerView) };
  }

  /** `POST /v1/mcp-servers/{name}/refresh` → the server with its tools listed again. */
  @Post(':name/refresh')
  @HttpCode(200)
  async refresh(
    @Param('name') name: string,
    @Body() body: unknown,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<McpServerView> {
    if (body !== undefined) objectWith(body, []);
    const response = await this.mcp.call('refreshMcpServer', callContextOf(caller, requestId), { name });
    return mcpServerView(answered(response.server, 'server'));
  }

  /** `DELETE /v1/mcp-servers/{name}` → 204; unknown: 404. */
  @Delete(':name')
  @HttpCode(204)
  async delete(
    @Param('name') name: string,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<void> {
    await this.mcp.call('deleteMcpServer', callContextOf(caller, requestId), { name });
  }
}
