import { PermissionDeniedError, ValidationError, uuidv7 } from '@keel/core';
import type { ActorRole } from '@keel/events';
import type { CallContext as ProtoCallContext } from '@keel/proto/keel/agent/v1/agent';
import type { CallContext } from '../call-context.js';

/** Who may call an RPC: the tenant roles allowed, and the words a refusal uses. */
export interface Access {
  roles: readonly ActorRole[];
  what: string;
}

/** Tenant configuration: admin keys only (API.md "Tenant configuration (admin)"). */
export const ADMIN: Access = { roles: ['admin'], what: 'admin' };
/** Conversation writes: create, send, approve or deny, cancel. */
export const EDITOR: Access = { roles: ['editor', 'admin'], what: 'editor or admin' };
/** Conversation reads. */
export const VIEWER: Access = { roles: ['viewer', 'editor', 'admin'], what: 'viewer, editor or admin' };

const TENANT_ROLES: readonly string[] = ['admin', 'editor', 'viewer'];

/**
 * The CallContext the runtime works with, from the one the gateway sent: tenant, key and role
 * are required (INVALID_ARGUMENT naming the field), the role must be allowed for the RPC
 * (PERMISSION_DENIED; the operator's key acts on no tenant's conversations or configuration).
 * An empty acting user is the key's own id; an empty correlation id gets a fresh one.
 */
export const callContextOf = (context: ProtoCallContext | undefined, access: Access): CallContext => {
  if (!context) throw new ValidationError('context is required', { field: 'context' });
  const tenantId = context.tenantId.trim();
  if (tenantId === '')
    throw new ValidationError('context.tenantId is required', { field: 'context.tenantId' });
  const actor = context.actor;
  if (!actor) throw new ValidationError('context.actor is required', { field: 'context.actor' });
  if (actor.keyId === '') {
    throw new ValidationError('context.actor.keyId is required', { field: 'context.actor.keyId' });
  }
  const role = actor.role;
  if (role !== 'operator' && !TENANT_ROLES.includes(role)) {
    throw new ValidationError('context.actor.role must be admin, editor, viewer or operator', {
      field: 'context.actor.role',
    });
  }
  if (!(access.roles as readonly string[]).includes(role)) {
    throw new PermissionDeniedError(
      `this operation needs a key with role ${access.what}; the key's role is ${role}`,
    );
  }
  return {
    tenantId,
    keyId: actor.keyId,
    role: role as ActorRole,
    userId: actor.userId === '' ? actor.keyId : actor.userId,
    correlationId: context.correlationId === '' ? uuidv7() : context.correlationId,
  };
};

/** A required string field of a request; INVALID_ARGUMENT naming it when empty. */
export const required = (value: string | undefined, field: string): string => {
  if (value === undefined || value.trim() === '') {
    throw new ValidationError(`${field} is required`, { field });
  }
  return value;
};
