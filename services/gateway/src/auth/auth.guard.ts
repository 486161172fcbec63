import { PermissionDeniedError, UnauthenticatedError, ValidationError } from '@keel/core';
import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { constantTimeEqual, hashApiKey } from '../tenants/api-keys.js';
import { TenantDirectory } from '../tenants/tenant-directory.js';
import type { KeyRole } from '../tenants/tenant-registry.events.js';
import { OPERATOR_KEY } from './operator-key.js';
import type { AuthenticatedRequest, Principal, RouteRole } from './principal.js';
import { PUBLIC_KEY, ROLES_KEY } from './roles.decorator.js';

const RANK: Readonly<Record<KeyRole, number>> = { viewer: 1, editor: 2, admin: 3 };
const BEARER = /^Bearer ([\x21-\x7e]{1,512})$/;
const USER = /^[\x21-\x7e]{1,256}$/;

const single = (value: string | string[] | undefined): string | undefined =>
  Array.isArray(value) ? value[0] : value;

/**
 * Authenticates every HTTP route but `@Public()` ones: `Authorization: Bearer <key>` is the
 * operator key (compared in constant time) or a tenant key, found by its SHA-256 in the tenant
 * directory after catching up with the registry, so a revoked key fails on its next request.
 * Missing, unknown or revoked: 401. Then `@Roles(...)`: a role not admitted is 403.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    @Inject(Reflector) private readonly reflector: Reflector,
    @Inject(TenantDirectory) private readonly directory: TenantDirectory,
    @Inject(OPERATOR_KEY) private readonly operatorKey: string | undefined,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean | undefined>(PUBLIC_KEY, targets)) return true;
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const principal = await this.authenticate(request);
    request.principal = principal;
    const roles = this.reflector.getAllAndOverride<RouteRole[] | undefined>(ROLES_KEY, targets);
    if (roles && !admits(roles, principal)) {
      throw new PermissionDeniedError(`this route needs the ${roles.join(' or ')} role`);
    }
    return true;
  }

  private async authenticate(request: AuthenticatedRequest): Promise<Principal> {
    const match = BEARER.exec(single(request.headers.authorization) ?? '');
    if (!match) throw new UnauthenticatedError('missing or malformed Authorization: Bearer <key>');
    const key = match[1]!;
    const user = single(request.headers['x-keel-user']);
    if (user !== undefined && !USER.test(user)) {
      throw new ValidationError('X-Keel-User must be 1 to 256 visible ASCII characters', {
        field: 'X-Keel-User',
      });
    }
    if (this.operatorKey !== undefined && constantTimeEqual(key, this.operatorKey)) {
      return { kind: 'operator', keyId: 'operator', role: 'operator', userId: user ?? 'operator' };
    }
    const keyHash = hashApiKey(key);
    await this.directory.catchUp();
    const entry = this.directory.keyByHash(keyHash);
    // The map finds the entry by hash; the stored hash is then compared in constant time.
    if (!entry || entry.revoked || !constantTimeEqual(entry.keyHash, keyHash)) {
      throw new UnauthenticatedError('unknown or revoked key');
    }
    return {
      kind: 'tenant',
      tenantId: entry.tenantId,
      keyId: entry.keyId,
      role: entry.role,
      userId: user ?? entry.keyId,
    };
  }
}

const admits = (roles: readonly RouteRole[], principal: Principal): boolean =>
  principal.kind === 'operator'
    ? roles.includes('operator')
    : roles.some((role) => role !== 'operator' && RANK[principal.role] >= RANK[role]);
