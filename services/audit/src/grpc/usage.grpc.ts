import type {
  GetUsageRequest,
  GetUsageResponse,
  UsageServiceController,
} from '@keel/proto/keel/usage/v1/usage';
import { GroupBy, UsageServiceControllerMethods } from '@keel/proto/keel/usage/v1/usage';
import { ValidationError } from '@keel/core';
import type { KeelLogger } from '@keel/runtime';
import { KEEL_LOGGER, toRpcException } from '@keel/runtime';
import { Controller, Inject } from '@nestjs/common';
import { AUDIT_STORAGE } from '../storage/audit-storage.provider.js';
import type { AuditStorage } from '../storage/audit-storage.js';
import { MAX_TENANTS_PER_QUERY, answerUsageAcross } from '../usage/usage-across.js';
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
    case GroupBy.AGENT:
    case 'GROUP_BY_AGENT':
      return 'agent';
    case GroupBy.TENANT:
    case 'GROUP_BY_TENANT':
      return 'tenant';
    default:
      return `GroupBy ${String(value)}`;
  }
};

/**
 * keel.usage.v1.UsageService as the audit service serves it: `tenant_id` (or `tenant_ids`, several
 * tenants read as one) is trusted (the gateway decided it).
 */
@Controller()
@UsageServiceControllerMethods()
export class UsageController implements UsageServiceController {
  constructor(
    @Inject(AUDIT_STORAGE) private readonly storage: AuditStorage,
    @Inject(KEEL_LOGGER) private readonly logger: KeelLogger,
  ) {}

  async getUsage(request: GetUsageRequest): Promise<GetUsageResponse> {
    try {
      const groupBy = groupByOf(request.groupBy as GroupBy | string);
      const tenantIds = request.tenantId ? [request.tenantId] : (request.tenantIds ?? []);
      if (tenantIds.length > MAX_TENANTS_PER_QUERY) {
        throw new ValidationError(`tenantIds at most ${MAX_TENANTS_PER_QUERY} per query`, {
          field: 'tenantIds',
        });
      }
      // The first tenant stands for all in the checks (each id is a rollup key, never parsed).
      const query = checkUsageQuery({
        tenantId: tenantIds[0] ?? '',
        from: request.from,
        to: request.to,
        tz: request.tz,
        groupBy: groupBy === 'tenant' ? 'day' : groupBy,
      });
      const answer =
        request.tenantId && groupBy !== 'tenant'
          ? await answerUsage(this.storage, query)
          : await answerUsageAcross(this.storage, tenantIds, {
              ...query,
              groupBy: groupBy === 'tenant' ? 'tenant' : query.groupBy,
            });
      const rows = answer.rows.map((row) => ({ feedbackUp: 0, feedbackDown: 0, ...row }));
      return { totals: answer.totals, rows };
    } catch (error) {
      throw toRpcException(error, this.logger, { rpc: 'GetUsage', tenantId: request.tenantId });
    }
  }
}
