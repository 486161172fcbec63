import { ValidationError } from '@keel/core';
import type { KeyRole } from './tenant-registry.events.js';
import { KEY_ROLES } from './tenant-registry.events.js';

/** Body of `POST /v1/tenants`. */
export interface CreateTenantRequest {
  name: string;
}

/** Body of `POST /v1/tenants/{tenantId}/keys`. */
export interface IssueKeyRequest {
  role: KeyRole;
  name?: string;
}

/** Body of `PUT /v1/tenants/{tenantId}/budget`. */
export interface SetBudgetRequest {
  monthlyUsd: number;
}

const fail = (field: string, message: string): never => {
  throw new ValidationError(message, { field });
};

/** The body as a plain object holding only `allowed` fields; anything else is refused by name. */
const objectWith = (body: unknown, allowed: readonly string[]): Record<string, unknown> => {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return fail('body', 'body must be a JSON object');
  }
  const unknown = Object.keys(body).find((field) => !allowed.includes(field));
  if (unknown !== undefined) fail(unknown, `${unknown}: unknown field (allowed: ${allowed.join(', ')})`);
  return body as Record<string, unknown>;
};

const name = (value: unknown, field: string): string => {
  if (typeof value !== 'string' || value.trim().length === 0 || value.length > 100) {
    return fail(field, `${field} must be a string of 1 to 100 characters`);
  }
  return value;
};

/** Checks `{ name }`. */
export const parseCreateTenant = (body: unknown): CreateTenantRequest => {
  const object = objectWith(body, ['name']);
  return { name: name(object.name, 'name') };
};

/** Checks `{ role, name? }`. */
export const parseIssueKey = (body: unknown): IssueKeyRequest => {
  const object = objectWith(body, ['role', 'name']);
  if (typeof object.role !== 'string' || !(KEY_ROLES as readonly string[]).includes(object.role)) {
    fail('role', `role must be one of ${KEY_ROLES.join(', ')}`);
  }
  return {
    role: object.role as KeyRole,
    ...(object.name !== undefined ? { name: name(object.name, 'name') } : {}),
  };
};

/** Checks `{ monthlyUsd }`. */
export const parseSetBudget = (body: unknown): SetBudgetRequest => {
  const object = objectWith(body, ['monthlyUsd']);
  const value = object.monthlyUsd;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    fail('monthlyUsd', 'monthlyUsd must be a number >= 0');
  }
  return { monthlyUsd: value as number };
};
