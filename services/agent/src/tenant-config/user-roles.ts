// A tool's (or an MCP server's) `userRoles` (API.md "The end user"): the end-user roles
// (`X-Keel-User-Role`) in whose turns it is offered and run.
import { ValidationError } from '@keel/core';
import { isEndUserRole } from '@keel/events';

/** Most end-user roles one `userRoles` may list. */
const MAX_USER_ROLES = 20;

/** Refuses a `userRoles` that is not at most 20 role words, naming the field. */
export const checkUserRoles = (userRoles: unknown): void => {
  if (userRoles === undefined) return;
  if (!Array.isArray(userRoles) || userRoles.length > MAX_USER_ROLES || !userRoles.every(isEndUserRole)) {
    throw new ValidationError(
      `userRoles must be at most ${MAX_USER_ROLES} end-user roles (1 to 64 letters, digits, _ or -)`,
      { field: 'userRoles' },
    );
  }
};
