import type { TenantDefaults } from '@keel/events';
import type { CallContext as ProtoCallContext } from '@keel/proto/keel/agent/v1/agent';
import type {
  Defaults,
  GetDefaultsRequest,
  GetDefaultsResponse,
  GetModelAccessRequest,
  GetModelAccessResponse,
  ModelsServiceController,
  PutDefaultsRequest,
  PutDefaultsResponse,
} from '@keel/proto/keel/models/v1/models';
import { ModelsServiceControllerMethods } from '@keel/proto/keel/models/v1/models';
import type { KeelLogger } from '@keel/runtime';
import { KEEL_LOGGER, toRpcException } from '@keel/runtime';
import { Controller, Inject } from '@nestjs/common';
import type { CallContext } from '../call-context.js';
import type { Access } from '../grpc/call-context.js';
import { ADMIN, VIEWER, callContextOf } from '../grpc/call-context.js';
import { TenantConfigService } from '../tenant-config/tenant-config.service.js';
import { DefaultsService } from './defaults.service.js';
import { configuredProviders } from './model-access.js';

/** The defaults message, absent fields left out (proto3 `optional`). */
const defaultsMessage = (defaults: TenantDefaults): Defaults => ({ ...defaults });

/**
 * keel.models.v1.ModelsService: which providers a tenant can call (any role) and its defaults
 * (admin writes). Each RPC checks the CallContext and the role and maps errors to gRPC statuses.
 */
@Controller()
@ModelsServiceControllerMethods()
export class ModelsController implements ModelsServiceController {
  constructor(
    @Inject(TenantConfigService) private readonly config: TenantConfigService,
    @Inject(DefaultsService) private readonly defaults: DefaultsService,
    @Inject(KEEL_LOGGER) private readonly logger: KeelLogger,
  ) {}

  getModelAccess(request: GetModelAccessRequest): Promise<GetModelAccessResponse> {
    return this.call('GetModelAccess', request.context, VIEWER, async (ctx) => {
      const { providers } = await this.config.load(ctx.tenantId);
      return { configuredProviders: configuredProviders(providers, process.env) };
    });
  }

  putDefaults(request: PutDefaultsRequest): Promise<PutDefaultsResponse> {
    return this.call('PutDefaults', request.context, ADMIN, async (ctx) => {
      const { model, temperature, maxSteps } = request.defaults ?? {};
      const given: TenantDefaults = { model, temperature, maxSteps };
      const stored = await this.defaults.put(ctx, given, new Date().toISOString());
      return { defaults: defaultsMessage(stored) };
    });
  }

  getDefaults(request: GetDefaultsRequest): Promise<GetDefaultsResponse> {
    return this.call('GetDefaults', request.context, VIEWER, async (ctx) => ({
      defaults: defaultsMessage(await this.defaults.load(ctx.tenantId)),
    }));
  }

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
