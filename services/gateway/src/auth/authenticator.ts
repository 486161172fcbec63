import { PermissionDeniedError, UnauthenticatedError, ValidationError } from '@keel/core';
import { Inject, Injectable, Optional } from '@nestjs/common';
import { constantTimeEqual, hashApiKey } from '../tenants/api-keys.js';
import { KeyUsage } from '../tenants/key-usage.js';
import { TenantDirectory } from '../tenants/tenant-directory.js';
import type { KeyRole } from '../tenants/tenant-registry.events.js';
import { OPERATOR_KEY } from './operator-key.js';
import type { Principal, RouteRole } from './principal.js';

const RANK: Readonly<Record<KeyRole, number>> = { viewer: 1, editor: 2, admin: 3 };
const BEARER = /^Bearer ([\x21-\x7e]{1,512})$/;
const USER = /^[\x21-\x7e]{1,256}$/;

/**
 * Resolves a caller from its `Bearer <key>` credential and acting user, for every edge (the HTTP
 * AuthGuard and the gRPC services): the operator key (compared in constant time) or a tenant
 * key, found by its SHA-256 in the tenant directory after catching up with the registry, so a
 * revoked key fails on its next request. Missing, unknown or revoked: UnauthenticatedError.
 * A tenant key's use is noted for `lastUsedAt` (coalesced, see KeyUsage).
 */
@Injectable()
export class Authenticator {
  constructor(
    @Inject(TenantDirectory) private readonly directory: TenantDirectory,
    @Inject(OPERATOR_KEY) private readonly operatorKey: string | undefined,
    @Optional() @Inject(KeyUsage) private readonly usage?: KeyUsage,
  ) {}

  /**
   * The principal of `authorization` (`Bearer <key>`); `user` (X-Keel-User, or the gRPC
   * request's acting user) becomes its acting user, else the key's own id. `userField` names the
   * user's source in a validation error.
   */
  async authenticate(
    authorization: string | undefined,
    user: string | undefined,
    userField = 'X-Keel-User',
  ): Promise<Principal> {
    const match = BEARER.exec(authorization ?? '');
    if (!match) throw new UnauthenticatedError('missing or malformed Authorization: Bearer <key>');
    const key = match[1]!;
    // The acting user is checked once the key is known: an unknown key is 401 whatever else is sent.
    const actingUser = (): string | undefined => {
      if (user !== undefined && !USER.test(user)) {
        throw new ValidationError(`${userField} must be 1 to 256 visible ASCII characters`, {
          field: userField,
        });
      }
      return user;
    };
    if (this.operatorKey !== undefined && constantTimeEqual(key, this.operatorKey)) {
      return { kind: 'operator', keyId: 'operator', role: 'operator', userId: actingUser() ?? 'operator' };
    }
    const keyHash = hashApiKey(key);
    await this.directory.catchUp();
    const entry = this.directory.keyByHash(keyHash);
    // The map finds the entry by hash; the stored hash is then compared in constant time.
    if (!entry || entry.revoked || !constantTimeEqual(entry.keyHash, keyHash)) {
      throw new UnauthenticatedError('unknown or revoked key');
    }
    const userId = actingUser() ?? entry.keyId;
    await this.usage?.recordUse(entry.keyId);
    return { kind: 'tenant', tenantId: entry.tenantId, keyId: entry.keyId, role: entry.role, userId };
  }
}

/** Whether `principal` may call what admits `roles` (tenant roles ranked; the operator only where named). */
export const admits = (roles: readonly RouteRole[], principal: Principal): boolean =>
  principal.kind === 'operator'
    ? roles.includes('operator')
    : roles.some((role) => role !== 'operator' && RANK[principal.role] >= RANK[role]);

/** Throws PermissionDeniedError unless `principal` may call what admits `roles`. */
export const assertAdmitted = (
  roles: readonly RouteRole[],
  principal: Principal,
  what = 'this route',
): void => {
  if (!admits(roles, principal))
    throw new PermissionDeniedError(`${what} needs the ${roles.join(' or ')} role`);
};
