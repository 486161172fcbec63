import { ValidationError, ownValue } from '@keel/core';
import type { HookDefinition } from '@keel/events';
import type { CallContext as ProtoCallContext } from '@keel/proto/keel/agent/v1/agent';
import type {
  DeleteHookRequest,
  DeleteHookResponse,
  Hook,
  HookServiceController,
  ListHooksRequest,
  ListHooksResponse,
  PutHookRequest,
  PutHookResponse,
} from '@keel/proto/keel/hooks/v1/hooks';
import { HookServiceControllerMethods } from '@keel/proto/keel/hooks/v1/hooks';
import type { KeelLogger } from '@keel/runtime';
import { KEEL_LOGGER, toRpcException } from '@keel/runtime';
import { Controller, Inject } from '@nestjs/common';
import type { CallContext } from '../call-context.js';
import { ADMIN, callContextOf, required } from '../grpc/call-context.js';
import { TenantConfigService } from '../tenant-config/tenant-config.service.js';

const now = (): string => new Date().toISOString();

/** A stored hook as keel.hooks.v1.Hook. */
export const hookMessage = (hook: HookDefinition): Hook => ({
  name: hook.name,
  url: hook.url,
  events: [...hook.events],
  ...(hook.agentId === undefined ? {} : { agentId: hook.agentId }),
});

/** keel.hooks.v1.HookService (admin): hooks are tenant configuration; the tools service delivers to them. */
@Controller()
@HookServiceControllerMethods()
export class HooksController implements HookServiceController {
  constructor(
    @Inject(TenantConfigService) private readonly config: TenantConfigService,
    @Inject(KEEL_LOGGER) private readonly logger: KeelLogger,
  ) {}

  putHook(request: PutHookRequest): Promise<PutHookResponse> {
    return this.call('PutHook', request.context, async (ctx) => {
      if (!request.hook) throw new ValidationError('hook is required', { field: 'hook' });
      const { name, url, events, agentId } = request.hook;
      const hook: HookDefinition = { name, url, events, ...(agentId === undefined ? {} : { agentId }) };
      const state = await this.config.apply(ctx, { type: 'PutHook', hook, at: now() });
      const stored = ownValue(state.hooks ?? {}, name);
      if (!stored) throw new Error(`hook ${name} was not stored`);
      return { hook: hookMessage(stored) };
    });
  }

  listHooks(request: ListHooksRequest): Promise<ListHooksResponse> {
    return this.call('ListHooks', request.context, async (ctx) => {
      const { hooks = {} } = await this.config.load(ctx.tenantId);
      const sorted = Object.values(hooks).sort((a, b) => a.name.localeCompare(b.name));
      return { data: sorted.map(hookMessage) };
    });
  }

  deleteHook(request: DeleteHookRequest): Promise<DeleteHookResponse> {
    return this.call('DeleteHook', request.context, async (ctx) => {
      const name = required(request.name, 'name');
      await this.config.apply(ctx, { type: 'DeleteHook', name, at: now() });
      return {};
    });
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
