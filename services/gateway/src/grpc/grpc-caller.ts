import type { Metadata } from '@grpc/grpc-js';
import { Metadata as GrpcMetadata } from '@grpc/grpc-js';
import { Inject, Injectable } from '@nestjs/common';
import { ACTING_TENANT_HEADER, actingPrincipal } from '../auth/acting-tenant.js';
import { Authenticator, assertAdmitted } from '../auth/authenticator.js';
import type { Principal, RouteRole } from '../auth/principal.js';
import { REQUEST_ID_HEADER, requestIdOf } from '../http/request-id.js';
import { RateLimitService } from '../rate-limit/rate-limit.service.js';
import { TenantDirectory } from '../tenants/tenant-directory.js';

/** Who called a gRPC method and under which request id (the correlation id of what it causes). */
export interface GrpcCaller {
  principal: Principal;
  requestId: string;
}

/** The part of a grpc-js server call that can send response headers. */
export interface HeaderSink {
  sendMetadata(metadata: Metadata): void;
}

const first = (metadata: Metadata | undefined, key: string): string | undefined => {
  const value = metadata?.get(key)[0];
  return typeof value === 'string' ? value : undefined;
};

/**
 * The gRPC edge's equivalent of the HTTP AuthGuard + RateLimitGuard: the same keys in
 * `authorization` metadata (`Bearer <key>`), the acting user from the request's
 * `acting_user_id` or `x-keel-user` metadata, the operator acting for a tenant with
 * `x-keel-tenant` as over HTTP, the same roles, then the key's rate limit; the
 * request id from `x-request-id` (or a fresh one), echoed in the response headers.
 */
@Injectable()
export class GrpcCallerResolver {
  constructor(
    @Inject(Authenticator) private readonly authenticator: Authenticator,
    @Inject(RateLimitService) private readonly limits: RateLimitService,
    @Inject(TenantDirectory) private readonly directory: TenantDirectory,
  ) {}

  /** Authenticates, checks `roles` for `method`, counts the call; throws the KeelError that says why not. */
  async resolve(
    metadata: Metadata | undefined,
    roles: readonly RouteRole[],
    method: string,
    options: { actingUserId?: string; call?: HeaderSink } = {},
  ): Promise<GrpcCaller> {
    const requestId = requestIdOf({ headers: { [REQUEST_ID_HEADER]: first(metadata, REQUEST_ID_HEADER) } });
    const headers = new GrpcMetadata();
    headers.set(REQUEST_ID_HEADER, requestId);
    options.call?.sendMetadata(headers);
    const fromRequest = options.actingUserId ? options.actingUserId : undefined;
    const principal = await this.authenticator.authenticate(
      first(metadata, 'authorization'),
      fromRequest ?? first(metadata, 'x-keel-user'),
      fromRequest !== undefined ? 'acting_user_id' : 'x-keel-user',
    );
    const acting = await actingPrincipal(
      principal,
      first(metadata, ACTING_TENANT_HEADER),
      roles,
      this.directory,
    );
    assertAdmitted(roles, acting, method);
    await this.limits.check(acting);
    return { principal: acting, requestId };
  }
}
