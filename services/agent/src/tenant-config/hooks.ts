import { NotFoundError, ValidationError, hasOwnKey } from '@keel/core';
import type { HookDefinition, TenantConfigEvent } from '@keel/events';
import { HOOK_EVENT_NAMES } from '@keel/events';

/*
 * Hooks in the tenant configuration (API.md "Tool sources and policies", Hooks). Pure: the URL
 * check (egress policy on literal hosts) is passed in; the tools service checks it again after
 * DNS resolution at every send.
 */

/** Names of hooks: the tool name rule (they also name the hook's dead letters, `hook:<name>`). */
export const HOOK_NAME = /^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/;
const AGENT_ID = /^[a-zA-Z0-9][a-zA-Z0-9_-]{0,63}$/;
/** Most hooks of one tenant: every durable event is matched against all of them. */
export const MAX_HOOKS = 20;

const fail = (field: string, message: string): never => {
  throw new ValidationError(message, { field });
};

/** A hook's events: known durable event names, at least one, no repeats. */
const checkEvents = (events: readonly string[]): void => {
  if (!Array.isArray(events) || events.length === 0)
    fail('events', 'events must list at least one event name');
  const unknown = events.filter((name) => !HOOK_EVENT_NAMES.includes(name));
  if (unknown.length > 0) {
    const shown = unknown.slice(0, 3).map((name) => JSON.stringify(name.slice(0, 64)));
    fail('events', `unknown event ${shown.join(', ')}; known: ${HOOK_EVENT_NAMES.join(', ')}`);
  }
  if (new Set(events).size !== events.length) fail('events', 'events must not repeat');
};

/** `HookConfigured` for a valid hook; `checkUrl` refuses a URL the egress policy refuses as written. */
export const decidePutHook = (
  hook: HookDefinition,
  hooks: Readonly<Record<string, HookDefinition>>,
  checkUrl: (field: string, value: string) => void,
  at: string,
): TenantConfigEvent[] => {
  if (!HOOK_NAME.test(hook.name)) fail('name', 'name must match ^[a-zA-Z][a-zA-Z0-9_-]{0,63}$');
  checkUrl('url', hook.url);
  checkEvents(hook.events);
  if (hook.agentId !== undefined && !AGENT_ID.test(hook.agentId)) {
    fail('agentId', 'agentId must match ^[a-zA-Z0-9][a-zA-Z0-9_-]{0,63}$');
  }
  if (!hasOwnKey(hooks, hook.name) && Object.keys(hooks).length >= MAX_HOOKS) {
    fail('name', `a tenant may define at most ${MAX_HOOKS} hooks`);
  }
  return [{ type: 'HookConfigured', data: { hook, at } }];
};

/** `HookDeleted`; an unknown hook is a NotFoundError. */
export const decideDeleteHook = (
  name: string,
  hooks: Readonly<Record<string, HookDefinition>>,
  at: string,
): TenantConfigEvent[] => {
  if (!hasOwnKey(hooks, name)) throw new NotFoundError(`there is no hook named ${name}`);
  return [{ type: 'HookDeleted', data: { name, at } }];
};
