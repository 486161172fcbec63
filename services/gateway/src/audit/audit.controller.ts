import { Controller, Get, Inject, Query } from '@nestjs/common';
import type { Principal } from '../auth/principal.js';
import { Caller } from '../auth/principal.js';
import { Roles } from '../auth/roles.decorator.js';
import { fail } from '../config/request-fields.js';
import { TenantDirectory } from '../tenants/tenant-directory.js';
import { AuditServiceClient } from '../usage/audit-service.client.js';
import { tenantOfRequest } from '../usage/tenant-of-request.js';

/** Largest page of the trail. */
export const MAX_AUDIT_LIMIT = 200;

/** One entry of the trail as API.md shows it: who, what, when, with which key, from which request. */
export interface AuditEntryView {
  id: string;
  at: string;
  type: string;
  target: string;
  actor: { keyId: string; role: string; userId: string };
  requestId: string;
  conversationId?: string;
  details: Record<string, string>;
}

const single = (value: unknown, field: string): string | undefined => {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') return fail(field, `${field} must be given once`);
  return value;
};

/** API.md "Usage and audit": `GET /v1/audit`, the tenant's audit trail from the audit service. */
@Controller('v1/audit')
@Roles('admin', 'operator')
export class AuditController {
  constructor(
    @Inject(AuditServiceClient) private readonly audit: AuditServiceClient,
    @Inject(TenantDirectory) private readonly directory: TenantDirectory,
  ) {}

  /** `GET /v1/audit?limit=&cursor=&type=` (operator: `&tenantId=`) → `{ data, nextCursor }`, newest first. */
  @Get()
  async trail(
    @Query() query: Record<string, unknown>,
    @Caller() caller: Principal,
  ): Promise<{ data: AuditEntryView[]; nextCursor: string | null }> {
    const rawLimit = single(query.limit, 'limit');
    const limit = rawLimit === undefined ? 50 : /^\d{1,4}$/.test(rawLimit) ? Number(rawLimit) : Number.NaN;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_AUDIT_LIMIT) {
      return fail('limit', `limit must be an integer from 1 to ${MAX_AUDIT_LIMIT}`);
    }
    const cursor = single(query.cursor, 'cursor') ?? '';
    const type = single(query.type, 'type') ?? '';
    if (type && !/^[A-Za-z]{1,64}$/.test(type)) return fail('type', 'type must be an event type name');
    const tenantId = await tenantOfRequest(caller, query.tenantId, this.directory);
    const page = await this.audit.listAuditEntries({ tenantId, limit, cursor, type });
    return {
      data: (page.data ?? []).map((e) => ({
        id: e.id,
        at: e.at,
        type: e.type,
        target: e.target,
        actor: { keyId: e.actor?.keyId ?? '', role: e.actor?.role ?? '', userId: e.actor?.userId ?? '' },
        requestId: e.requestId,
        ...(e.conversationId ? { conversationId: e.conversationId } : {}),
        details: e.details ?? {},
      })),
      nextCursor: page.nextCursor || null,
    };
  }
}
