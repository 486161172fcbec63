import type {
  GetUsageRequest,
  GetUsageResponse,
  UsageServiceController,
} from '@keel/proto/keel/usage/v1/usage';
import { GroupBy, UsageServiceControllerMethods } from '@keel/proto/keel/usage/v1/usage';
import type { KeelLogger } from '@keel/runtime';
import { KEEL_LOGGER, toRpcException } from '@keel/runtime';
import { Controller, Inject } from '@nestjs/common';
import { AUDIT_STORAGE } from '../storage/audit-storage.provider.js';
import type { AuditStorage } from '../storage/audit-storage.js';
import { answerUsage } from '../usage/usage-query.js';
import { checkUsageQuery } from '../usage/usage-request.js';

/**
 * The grouping of a request. The Nest gRPC server loads protos with `enums: String`, so the
 * value arrives as its name (`GROUP_BY_MODEL`); a generated client's number is read too.
 */
const groupByOf = (value: GroupBy | string): string => {
  switch (value) {
    case GroupBy.UNSPECIFIED:
    case GroupBy.DAY:
    case 'GROUP_BY_UNSPECIFIED':
    case 'GROUP_BY_DAY':
      return 'day';
    case GroupBy.MODEL:
    case 'GROUP_BY_MODEL':
      return 'model';
    case GroupBy.USER:
    case 'GROUP_BY_USER':
      return 'user';
    default:
      return `GroupBy ${String(value)}`;
  }
};

/** keel.usage.v1.UsageService as the audit service serves it: `tenant_id` is trusted (the gateway decided it). */
@Controller()
@UsageServiceControllerMethods()
export class UsageController implements UsageServiceController {
  constructor(
    @Inject(AUDIT_STORAGE) private readonly storage: AuditStorage,
    @Inject(KEEL_LOGGER) private readonly logger: KeelLogger,
  ) {}

  async getUsage(request: GetUsageRequest): Promise<GetUsageResponse> {
    try {
      const query = checkUsageQuery({
        tenantId: request.tenantId,
        from: request.from,
        to: request.to,
        tz: request.tz,
        groupBy: groupByOf(request.groupBy as GroupBy | string),
      });
      const answer = await answerUsage(this.storage, query);
      return { totals: answer.totals, rows: answer.rows };
    } catch (error) {
      throw toRpcException(error, this.logger, { rpc: 'GetUsage', tenantId: request.tenantId });
    }
  }
}
