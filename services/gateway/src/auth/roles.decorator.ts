import { SetMetadata } from '@nestjs/common';
import type { RouteRole } from './principal.js';

/** Metadata key of the roles a route admits. */
export const ROLES_KEY = 'keel:roles';

/** Metadata key marking a route that needs no key (the probes). */
export const PUBLIC_KEY = 'keel:public';

/**
 * The roles a route admits. Tenant roles are ranked (admin ⊇ editor ⊇ viewer), so
 * `@Roles('viewer')` admits every tenant key; `operator` is admitted only where it is named.
 */
export const Roles = (...roles: RouteRole[]) => SetMetadata(ROLES_KEY, roles);

/** A route anyone may call without a key. */
export const Public = () => SetMetadata(PUBLIC_KEY, true);
