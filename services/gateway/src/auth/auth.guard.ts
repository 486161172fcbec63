import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { Inject, Injectable, Optional } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { throwDeferredBodyError } from '../http/deferred-body.js';
import { KeyUsage } from '../tenants/key-usage.js';
import { TenantDirectory } from '../tenants/tenant-directory.js';
import { ACTING_TENANT_HEADER, actingPrincipal } from './acting-tenant.js';
import { Authenticator, assertAdmitted } from './authenticator.js';
import { OPERATOR_KEY } from './operator-key.js';
import type { AuthenticatedRequest, RouteRole } from './principal.js';
import { PUBLIC_KEY, ROLES_KEY } from './roles.decorator.js';

const single = (value: string | string[] | undefined): string | undefined =>
  Array.isArray(value) ? value[0] : value;

/**
 * Authenticates every HTTP route but `@Public()` ones: `Authorization: Bearer <key>` is the
 * operator key (compared in constant time) or a tenant key, found by its SHA-256 in the tenant
 * directory after catching up with the registry, so a revoked key fails on its next request.
 * Missing, unknown or revoked: 401. Then `@Roles(...)`: a role not admitted is 403. The key lookup
 * is the Authenticator's, shared with the gRPC services. `X-Keel-Tenant` lets the operator act as
 * one tenant's admin (see actingPrincipal). Only then is a body that could not be
 * parsed answered (400/415): a caller without a valid key learns nothing but 401.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  private readonly authenticator: Authenticator;

  constructor(
    @Inject(Reflector) private readonly reflector: Reflector,
    @Inject(TenantDirectory) private readonly directory: TenantDirectory,
    @Inject(OPERATOR_KEY) operatorKey: string | undefined,
    @Optional() @Inject(KeyUsage) usage?: KeyUsage,
  ) {
    this.authenticator = new Authenticator(directory, operatorKey, usage);
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const targets = [context.getHandler(), context.getClass()];
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    if (this.reflector.getAllAndOverride<boolean | undefined>(PUBLIC_KEY, targets)) {
      throwDeferredBodyError(request);
      return true;
    }
    const principal = await this.authenticator.authenticate(
      single(request.headers.authorization),
      single(request.headers['x-keel-user']),
    );
    const roles = this.reflector.getAllAndOverride<RouteRole[] | undefined>(ROLES_KEY, targets);
    const acting = await actingPrincipal(
      principal,
      single(request.headers[ACTING_TENANT_HEADER]),
      roles,
      this.directory,
    );
    request.principal = acting;
    if (roles) assertAdmitted(roles, acting);
    throwDeferredBodyError(request);
    return true;
  }
}
