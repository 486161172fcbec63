import type { Decider } from '@keel/core';
import { AlreadyExistsError, NotFoundError, ownValue, ValidationError } from '@keel/core';
import type { KeyRole, TenantRegistryEvent } from './tenant-registry.events.js';
import { KEY_ROLES } from './tenant-registry.events.js';

/** A key as the registry knows it: its hash, never the key. */
export interface RegisteredKey {
  keyId: string;
  role: KeyRole;
  name?: string;
  keyHash: string;
  issuedAt: string;
  revoked: boolean;
}

/** A tenant as the registry knows it. */
export interface RegisteredTenant {
  id: string;
  name: string;
  createdAt: string;
  monthlyUsd?: number;
  keys: Record<string, RegisteredKey>;
}

/** Every tenant, rebuilt from the registry stream. */
export interface TenantRegistry {
  tenants: Record<string, RegisteredTenant>;
}

/** Commands of the registry. Ids, times and key hashes arrive made: deciders do no I/O. */
export type TenantRegistryCommand =
  | { type: 'CreateTenant'; tenantId: string; name: string; at: string }
  | {
      type: 'IssueKey';
      tenantId: string;
      keyId: string;
      role: string;
      name?: string;
      keyHash: string;
      at: string;
    }
  | { type: 'RevokeKey'; tenantId: string; keyId: string; at: string }
  | { type: 'SetBudget'; tenantId: string; monthlyUsd: number; at: string };

const MAX_NAME = 100;
const SHA256_HEX = /^[0-9a-f]{64}$/;

const fail = (field: string, message: string): never => {
  throw new ValidationError(message, { field });
};

const checkName = (field: string, name: unknown): void => {
  if (typeof name !== 'string' || name.trim().length === 0 || name.length > MAX_NAME) {
    fail(field, `${field} must be 1 to ${MAX_NAME} characters`);
  }
};

/**
 * The tenant registered under `tenantId`, if any. Ids come from request paths: only own entries
 * count, so `toString`, `constructor` or `__proto__` find no tenant (nor key, below).
 */
export const registeredTenant = (state: TenantRegistry, tenantId: string): RegisteredTenant | undefined =>
  ownValue(state.tenants, tenantId);

const tenantOf = (state: TenantRegistry, tenantId: string): RegisteredTenant => {
  const tenant = registeredTenant(state, tenantId);
  if (!tenant) throw new NotFoundError(`no tenant ${tenantId}`, { details: { tenantId } });
  return tenant;
};

const withTenant = (
  state: TenantRegistry,
  tenantId: string,
  change: (tenant: RegisteredTenant) => RegisteredTenant,
): TenantRegistry => {
  const tenant = registeredTenant(state, tenantId);
  return tenant ? { tenants: { ...state.tenants, [tenantId]: change(tenant) } } : state;
};

/**
 * The snapshot of the registry state: its name changes whenever `evolve` does, so no snapshot
 * folded by an older `evolve` is read (v2: events on tenants that do not exist fold to nothing).
 */
export const TENANT_REGISTRY_SNAPSHOT = 'tenant-registry-v2';

/** One command of the tenant registry, by its type. */
type CommandOf<T extends TenantRegistryCommand['type']> = Extract<TenantRegistryCommand, { type: T }>;

const createTenant = (command: CommandOf<'CreateTenant'>, state: TenantRegistry): TenantRegistryEvent[] => {
  checkName('name', command.name);
  if (registeredTenant(state, command.tenantId))
    throw new AlreadyExistsError(`tenant ${command.tenantId} exists`);
  return [
    {
      type: 'TenantCreated',
      data: { tenantId: command.tenantId, name: command.name, createdAt: command.at },
    },
  ];
};

const issueKey = (command: CommandOf<'IssueKey'>, state: TenantRegistry): TenantRegistryEvent[] => {
  const { tenantId, keyId, role, name, keyHash, at } = command;
  if (!(KEY_ROLES as readonly string[]).includes(role))
    fail('role', `role must be one of ${KEY_ROLES.join(', ')}`);
  if (name !== undefined) checkName('name', name);
  if (!SHA256_HEX.test(keyHash)) fail('keyHash', 'keyHash must be a hex SHA-256');
  const tenant = tenantOf(state, tenantId);
  if (ownValue(tenant.keys, keyId)) throw new AlreadyExistsError(`key ${keyId} exists`);
  return [
    {
      type: 'KeyIssued',
      data: {
        tenantId,
        keyId,
        role: role as KeyRole,
        ...(name !== undefined ? { name } : {}),
        keyHash,
        issuedAt: at,
      },
    },
  ];
};

const revokeKey = (command: CommandOf<'RevokeKey'>, state: TenantRegistry): TenantRegistryEvent[] => {
  const key = ownValue(tenantOf(state, command.tenantId).keys, command.keyId);
  if (!key) throw new NotFoundError(`no key ${command.keyId}`, { details: { keyId: command.keyId } });
  // Revoking twice changes nothing: DELETE is idempotent.
  if (key.revoked) return [];
  return [
    { type: 'KeyRevoked', data: { tenantId: command.tenantId, keyId: command.keyId, revokedAt: command.at } },
  ];
};

const setBudget = (command: CommandOf<'SetBudget'>, state: TenantRegistry): TenantRegistryEvent[] => {
  const { tenantId, monthlyUsd, at } = command;
  if (typeof monthlyUsd !== 'number' || !Number.isFinite(monthlyUsd) || monthlyUsd < 0) {
    fail('monthlyUsd', 'monthlyUsd must be a number >= 0');
  }
  tenantOf(state, tenantId);
  return [{ type: 'BudgetSet', data: { tenantId, monthlyUsd, at } }];
};

/** The platform's tenant registry: tenants, their keys (by hash) and budgets. */
export const tenantRegistryDecider: Decider<TenantRegistry, TenantRegistryCommand, TenantRegistryEvent> = {
  initialState: () => ({ tenants: {} }),
  decide: (command, state) => {
    switch (command.type) {
      case 'CreateTenant':
        return createTenant(command, state);
      case 'IssueKey':
        return issueKey(command, state);
      case 'RevokeKey':
        return revokeKey(command, state);
      case 'SetBudget':
        return setBudget(command, state);
      default: {
        const unknown: never = command;
        throw new ValidationError(`unknown command ${String((unknown as { type: unknown }).type)}`);
      }
    }
  },
  evolve: (state, event) => {
    switch (event.type) {
      case 'TenantCreated': {
        const { tenantId, name, createdAt } = event.data;
        return { tenants: { ...state.tenants, [tenantId]: { id: tenantId, name, createdAt, keys: {} } } };
      }
      case 'KeyIssued': {
        const { tenantId, keyId, role, name, keyHash, issuedAt } = event.data;
        const key: RegisteredKey = {
          keyId,
          role,
          ...(name !== undefined ? { name } : {}),
          keyHash,
          issuedAt,
          revoked: false,
        };
        return withTenant(state, tenantId, (tenant) => ({
          ...tenant,
          keys: { ...tenant.keys, [keyId]: key },
        }));
      }
      case 'KeyRevoked': {
        const { tenantId, keyId } = event.data;
        return withTenant(state, tenantId, (tenant) => {
          const key = ownValue(tenant.keys, keyId);
          return key ? { ...tenant, keys: { ...tenant.keys, [keyId]: { ...key, revoked: true } } } : tenant;
        });
      }
      case 'BudgetSet':
        return withTenant(state, event.data.tenantId, (tenant) => ({
          ...tenant,
          monthlyUsd: event.data.monthlyUsd,
        }));
      default:
        return state;
    }
  },
};
