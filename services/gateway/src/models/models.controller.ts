import { Body, Controller, Get, Inject, Put } from '@nestjs/common';
import { callContextOf } from '../agent-client/agent.client.js';
import type { Principal } from '../auth/principal.js';
import { Caller, RequestId } from '../auth/principal.js';
import { Roles } from '../auth/roles.decorator.js';
import { PricingClient } from '../grpc/pricing.client.js';
import { ModelsClient } from './models.client.js';
import type { DefaultsView, ModelView } from './model-views.js';
import { defaultsView, modelViews, parsePutDefaults } from './model-views.js';

/** API.md "Models, defaults and agent options": the models list (viewer) and the defaults (admin). */
@Controller('v1')
export class ModelsController {
  constructor(
    @Inject(ModelsClient) private readonly models: ModelsClient,
    @Inject(PricingClient) private readonly pricing: PricingClient,
  ) {}

  /** `GET /v1/models` → the catalogue with the operator's overrides, `configured` for the tenant. */
  @Get('models')
  @Roles('viewer')
  async listModels(
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<{ data: ModelView[] }> {
    const [access, catalogue] = await Promise.all([
      this.models.call('getModelAccess', callContextOf(caller, requestId)),
      this.pricing.listModels({}, requestId),
    ]);
    return { data: modelViews(catalogue.models, access.configuredProviders) };
  }

  /** `PUT /v1/defaults` `{ model?, temperature?, maxSteps? }` → 200 the tenant's defaults. */
  @Put('defaults')
  @Roles('admin')
  async putDefaults(
    @Body() body: unknown,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<DefaultsView> {
    const defaults = parsePutDefaults(body);
    const response = await this.models.call('putDefaults', callContextOf(caller, requestId), { defaults });
    return defaultsView(response.defaults);
  }

  /** `GET /v1/defaults` → the tenant's defaults (fields never set left out). */
  @Get('defaults')
  @Roles('viewer')
  async getDefaults(@Caller() caller: Principal, @RequestId() requestId: string): Promise<DefaultsView> {
    const response = await this.models.call('getDefaults', callContextOf(caller, requestId));
    return defaultsView(response.defaults);
  }
}
