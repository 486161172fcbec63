import { Injectable } from '@nestjs/common';
import {
  DeleteMcpServerRequest,
  ListMcpServersRequest,
  McpServiceService,
  PutMcpServerRequest,
  RefreshMcpServerRequest,
} from '@keel/proto/keel/mcp/v1/mcp';
import { AgentSideClient } from '../agent-client/agent-side-client.js';

type McpService = typeof McpServiceService;

/** A typed client of keel.mcp.v1.McpService, served by the agent. */
@Injectable()
export class McpClient extends AgentSideClient<McpService> {
  constructor(address?: string, deadlineMs?: number) {
    const requests = {
      putMcpServer: PutMcpServerRequest,
      listMcpServers: ListMcpServersRequest,
      refreshMcpServer: RefreshMcpServerRequest,
      deleteMcpServer: DeleteMcpServerRequest,
    };
    super(McpServiceService, requests, address, deadlineMs);
  }
}
