import { NotFoundError, ValidationError, ownValue } from '@keel/core';
import type { McpServerDefinition } from '@keel/events';
import type { CallContext as ProtoCallContext } from '@keel/proto/keel/agent/v1/agent';
import type {
  DeleteMcpServerRequest,
  DeleteMcpServerResponse,
  ListMcpServersRequest,
  ListMcpServersResponse,
  McpServiceController,
  PutMcpServerRequest,
  PutMcpServerResponse,
  RefreshMcpServerRequest,
  RefreshMcpServerResponse,
} from '@keel/proto/keel/mcp/v1/mcp';
import { McpServiceControllerMethods } from '@keel/proto/keel/mcp/v1/mcp';
import type { KeelLogger } from '@keel/runtime';
import { KEEL_LOGGER, SecretBox, toRpcException } from '@keel/runtime';
import { Controller, Inject } from '@nestjs/common';
import type { CallContext } from '../call-context.js';
import { ADMIN, callContextOf, required } from '../grpc/call-context.js';
import type { PutMcpServer } from '../tenant-config/mcp-servers.js';
import { MCP_SERVER_NAME } from '../tenant-config/mcp-servers.js';
import { TenantConfigService } from '../tenant-config/tenant-config.service.js';
import type { McpLister } from './mcp-lister.js';
import { MCP_LIST_TIMEOUT_MS, mcpServerMessage, mcpSettingsOf } from './mcp.mapping.js';

/** Nest injection token of the McpLister (a test may provide its own). */
export const MCP_LISTER = Symbol.for('keel.agent.mcp-lister');

const now = (): string => new Date().toISOString();

/** The context an MCP server's headers are sealed under (the tools service opens them so). */
export const mcpHeadersContext = (tenantId: string, server: string): string => `${tenantId}/mcp/${server}`;

/**
 * keel.mcp.v1.McpService (admin): a server is connected and its tools listed before it is stored;
 * headers are sealed at once and never answered. Errors map to gRPC statuses.
 */
@Controller()
@McpServiceControllerMethods()
export class McpController implements McpServiceController {
  constructor(
    @Inject(TenantConfigService) private readonly config: TenantConfigService,
    @Inject(SecretBox) private readonly secrets: SecretBox,
    @Inject(MCP_LISTER) private readonly lister: McpLister,
    @Inject(KEEL_LOGGER) private readonly logger: KeelLogger,
  ) {}

  putMcpServer(request: PutMcpServerRequest): Promise<PutMcpServerResponse> {
    return this.call('PutMcpServer', request.context, async (ctx) => {
      if (!request.server) throw new ValidationError('server is required', { field: 'server' });
      const settings = mcpSettingsOf(request.server);
      // The name first: nothing is connected to for a request refused anyway.
      if (!MCP_SERVER_NAME.test(settings.name)) {
        throw new ValidationError('name must match ^[a-zA-Z][a-zA-Z0-9-]{0,31}$', { field: 'name' });
      }
      const headers = request.headers;
      const names = Object.keys(headers).sort();
      const sealed =
        names.length === 0
          ? {}
          : {
              headers: this.secrets.seal(
                JSON.stringify(headers),
                mcpHeadersContext(ctx.tenantId, settings.name),
              ),
              headerNames: names,
            };
      const listed = await this.lister.list({ url: settings.url, headers, timeoutMs: MCP_LIST_TIMEOUT_MS });
      return { server: await this.store(ctx, { server: { ...settings, ...sealed }, listed }) };
    });
  }

  listMcpServers(request: ListMcpServersRequest): Promise<ListMcpServersResponse> {
    return this.call('ListMcpServers', request.context, async (ctx) => {
      const { mcpServers } = await this.config.load(ctx.tenantId);
      const sorted = Object.values(mcpServers).sort((a, b) => a.name.localeCompare(b.name));
      return { data: sorted.map(mcpServerMessage) };
    });
  }

  refreshMcpServer(request: RefreshMcpServerRequest): Promise<RefreshMcpServerResponse> {
    return this.call('RefreshMcpServer', request.context, async (ctx) => {
      const name = required(request.name, 'name');
      const server = ownValue((await this.config.load(ctx.tenantId)).mcpServers, name);
      if (!server) throw new NotFoundError(`there is no MCP server named ${name}`);
      const headers = server.headers
        ? (JSON.parse(this.secrets.open(server.headers, mcpHeadersContext(ctx.tenantId, name))) as Record<
            string,
            string
          >)
        : {};
      const listed = await this.lister.list({ url: server.url, headers, timeoutMs: MCP_LIST_TIMEOUT_MS });
      const { tools: _listedBefore, ...settings } = server;
      return { server: await this.store(ctx, { server: settings, listed }) };
    });
  }

  deleteMcpServer(request: DeleteMcpServerRequest): Promise<DeleteMcpServerResponse> {
    return this.call('DeleteMcpServer', request.context, async (ctx) => {
      const name = required(request.name, 'name');
      await this.config.apply(ctx, { type: 'DeleteMcpServer', name, at: now() });
      return {};
    });
  }

  private async store(ctx: CallContext, put: PutMcpServer): Promise<ReturnType<typeof mcpServerMessage>> {
    const state = await this.config.apply(ctx, { type: 'PutMcpServer', put, at: now() });
    const stored: McpServerDefinition | undefined = ownValue(state.mcpServers, put.server.name);
    if (!stored) throw new Error(`MCP server ${put.server.name} was not stored`);
    return mcpServerMessage(stored);
  }

  /** Checks the context and the admin role, runs the call, and maps any error to a gRPC status. */
  private async call<T>(
    rpc: string,
    context: ProtoCallContext | undefined,
    run: (ctx: CallContext) => Promise<T>,
  ): Promise<T> {
    let ctx: CallContext | undefined;
    try {
      ctx = callContextOf(context, ADMIN);
      return await run(ctx);
    } catch (error) {
      throw toRpcException(error, this.logger, {
        rpc,
        ...(ctx ? { tenantId: ctx.tenantId, correlationId: ctx.correlationId } : {}),
      });
    }
  }
}
