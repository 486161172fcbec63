import type { EventMetadata } from '@keel/core';
import type { ExecutionContext } from '@nestjs/common';
import { createParamDecorator } from '@nestjs/common';
import type { KeyRole } from '../tenants/tenant-registry.events.js';

/** Who is calling: the operator, or a tenant key with its role. */
export type Principal =
  | { kind: 'operator'; keyId: 'operator'; role: 'operator'; userId: string }
  | {
      kind: 'tenant';
      tenantId: string;
      keyId: string;
      role: KeyRole;
      userId: string;
      /** Set when the operator key acts as this tenant's admin (`X-Keel-Tenant`); keyId is then `operator`. */
      actingOperator?: true;
    };

/** A role a route may require (API.md Roles). */
export type RouteRole = 'operator' | KeyRole;

/** The authenticated request, as the guard leaves it. */
export interface AuthenticatedRequest {
  id: string;
  headers: Record<string, string | string[] | undefined>;
  principal?: Principal;
}

/** The caller of the current request (set by the AuthGuard). */
export const Caller = createParamDecorator((_data: unknown, context: ExecutionContext): Principal => {
  const principal = context.switchToHttp().getRequest<AuthenticatedRequest>().principal;
  if (!principal) throw new Error('Caller used on a route without the auth guard');
  return principal;
});

/** The request id (X-Request-Id, accepted or generated): the correlation id of what it causes. */
export const RequestId = createParamDecorator(
  (_data: unknown, context: ExecutionContext): string =>
    context.switchToHttp().getRequest<{ id: string }>().id,
);

/** Event metadata for what a request causes: its correlation id and the acting key and user. */
export const metadataOf = (principal: Principal, requestId: string): EventMetadata => ({
  correlationId: requestId,
  actor: { keyId: principal.keyId, role: principal.role, userId: principal.userId },
});
