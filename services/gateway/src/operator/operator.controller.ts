import { Controller, Get, Inject, Query } from '@nestjs/common';
import { Roles } from '../auth/roles.decorator.js';
import type { Overview } from './overview.js';
import { overviewZone } from './overview.js';
import { OverviewService } from './overview.service.js';

/**
 * API.md "Operator console": `GET /v1/operator/overview?tz=` (operator) → the platform at a
 * glance, today and this month in `tz` (default UTC; an unknown zone is 400 naming `tz`).
 */
@Controller('v1/operator')
@Roles('operator')
export class OperatorController {
  constructor(@Inject(OverviewService) private readonly overviews: OverviewService) {}

  @Get('overview')
  overview(@Query('tz') tz: unknown): Promise<Overview> {
    return this.overviews.overview(overviewZone(tz));
  }
}
