import { ValidationError } from '@keel/core';
import type {
  AuditServiceController,
  ListAuditEntriesRequest,
  ListAuditEntriesResponse,
} from '@keel/proto/keel/audit/v1/audit';
import { AuditServiceControllerMethods } from '@keel/proto/keel/audit/v1/audit';
import type { KeelLogger } from '@keel/runtime';
import { KEEL_LOGGER, toRpcException } from '@keel/runtime';
import { Controller, Inject } from '@nestjs/common';
import { AUDIT_STORAGE } from '../storage/audit-storage.provider.js';
import type { AuditStorage } from '../storage/audit-storage.js';
import { auditSortKey } from '../trail/audit-entry.js';
import { decodeAuditCursor, encodeAuditCursor } from './audit-cursor.js';

/** Page size when the request says 0, and the largest one allowed. */
export const DEFAULT_AUDIT_PAGE = 50;
export const MAX_AUDIT_PAGE = 200;

/** keel.audit.v1.AuditService: a tenant's trail, newest first; `tenant_id` is trusted (the gateway decided it). */
@Controller()
@AuditServiceControllerMethods()
export class AuditController implements AuditServiceController {
  constructor(
    @Inject(AUDIT_STORAGE) private readonly storage: AuditStorage,
    @Inject(KEEL_LOGGER) private readonly logger: KeelLogger,
  ) {}

  async listAuditEntries(request: ListAuditEntriesRequest): Promise<ListAuditEntriesResponse> {
    try {
      if (!request.tenantId) throw new ValidationError('tenantId is required', { field: 'tenantId' });
      const limit = request.limit || DEFAULT_AUDIT_PAGE;
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_AUDIT_PAGE) {
        throw new ValidationError(`limit must be from 1 to ${MAX_AUDIT_PAGE}`, { field: 'limit' });
      }
      const entries = await this.storage.pageAudit({
        tenantId: request.tenantId,
        limit: limit + 1,
        ...(request.cursor ? { before: decodeAuditCursor(request.cursor) } : {}),
        ...(request.type ? { type: request.type } : {}),
      });
      const page = entries.slice(0, limit);
      const last = page[page.length - 1];
      return {
        data: page.map((e) => ({
          id: e.id,
          at: e.at,
          type: e.type,
          target: e.target,
          actor: e.actor,
          requestId: e.requestId,
          conversationId: e.conversationId ?? '',
          details: e.details,
        })),
        nextCursor: entries.length > limit && last ? encodeAuditCursor(auditSortKey(last)) : '',
      };
    } catch (error) {
      throw toRpcException(error, this.logger, { rpc: 'ListAuditEntries', tenantId: request.tenantId });
    }
  }
}
