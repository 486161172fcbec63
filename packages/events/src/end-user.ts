/*
 * The end user a tenant's backend acts for (API.md "The end user"): `X-Keel-User` names them,
 * `X-Keel-User-Role` gives their role in the tenant's own app (`viewer`, `owner`, …). Keel does
 * not know these roles; it only offers and runs tools by them (`userRoles`) and skips approvals
 * (`exceptUserRoles`).
 */

/** A word an end-user role must be: 1 to 64 letters, digits, `_` or `-`. */
export const END_USER_ROLE = /^[A-Za-z0-9_-]{1,64}$/;

/** Whether `value` is an end-user role word. */
export const isEndUserRole = (value: unknown): value is string =>
  typeof value === 'string' && END_USER_ROLE.test(value);

/** The end user of a turn: their id (`X-Keel-User`, else the key id) and role when one was sent. */
export interface EndUser {
  id: string;
  role?: string;
}

/**
 * Whether a tool (or MCP server) listing `userRoles` is offered and run in a turn of `user`:
 * always when it lists none, else only when the turn's role is listed (no role: not listed).
 */
export const allowsEndUser = (userRoles: readonly string[] | undefined, user: EndUser | undefined): boolean =>
  !userRoles || userRoles.length === 0 || (user?.role !== undefined && userRoles.includes(user.role));
