import { NotFoundError, ValidationError } from '@keel/core';
import { DeciderSpec } from '@keel/core/testing';
import type { HookDefinition, TenantConfigEvent } from '@keel/events';
import { describe, expect, it } from 'vitest';
import { MAX_HOOKS } from './hooks.js';
import { tenantConfigDecider } from './tenant-config.decider.js';

const at = '2026-11-24T06:00:00.000Z';
const spec = DeciderSpec.for(tenantConfigDecider);
const audit: HookDefinition = {
  name: 'audit',
  url: 'https://hooks.example.com/keel',
  events: ['turn.completed', 'run.completed'],
};
const configured = (hook: HookDefinition): TenantConfigEvent => ({
  type: 'HookConfigured',
  data: { hook, at },
});

/** The field a refused command names. */
const refusedField = (hook: HookDefinition, given: TenantConfigEvent[] = []): string | undefined => {
  const state = given.reduce(tenantConfigDecider.evolve, tenantConfigDecider.initialState());
  try {
    tenantConfigDecider.decide({ type: 'PutHook', hook, at }, state);
  } catch (error) {
    if (error instanceof ValidationError) return error.field;
    throw error;
  }
  return undefined;
};

describe('hooks in the tenant configuration', () => {
  it('stores a hook, and replaces it by name', () => {
    spec
      .given([])
      .when({ type: 'PutHook', hook: audit, at })
      .then([configured(audit)]);
    const narrower = { ...audit, events: ['turn.failed'], agentId: 'support' };
    spec
      .given([configured(audit)])
      .when({ type: 'PutHook', hook: narrower, at })
      .then([configured(narrower)]);
    const state = [configured(audit), configured(narrower)].reduce(
      tenantConfigDecider.evolve,
      tenantConfigDecider.initialState(),
    );
    expect(state.hooks).toEqual({ audit: narrower });
  });

  it('refuses an unknown event name (naming it), no events, a bad name, URL or agent, naming the field', () => {
    expect(refusedField({ ...audit, events: ['turn.completed', 'turn.exploded'] })).toBe('events');
    expect(() =>
      tenantConfigDecider.decide(
        { type: 'PutHook', hook: { ...audit, events: ['turn.exploded'] }, at },
        tenantConfigDecider.initialState(),
      ),
    ).toThrow(/turn\.exploded/);
    expect(refusedField({ ...audit, events: [] })).toBe('events');
    expect(refusedField({ ...audit, events: ['data'] })).toBe('events');
    expect(refusedField({ ...audit, events: ['turn.completed', 'turn.completed'] })).toBe('events');
    expect(refusedField({ ...audit, name: 'has space' })).toBe('name');
    expect(refusedField({ ...audit, url: 'not a url' })).toBe('url');
    expect(refusedField({ ...audit, url: 'http://169.254.169.254/latest' })).toBe('url');
    expect(refusedField({ ...audit, url: 'http://localhost:9/hook' })).toBe('url');
    expect(refusedField({ ...audit, agentId: '-bad' })).toBe('agentId');
  });

  it(`keeps a tenant within ${MAX_HOOKS} hooks (replacing one always may)`, () => {
    const full = Array.from({ length: MAX_HOOKS }, (_, i) => configured({ ...audit, name: `h${i}` }));
    expect(refusedField({ ...audit, name: 'one-more' }, full)).toBe('name');
    expect(refusedField({ ...audit, name: 'h3' }, full)).toBeUndefined();
  });

  it('deletes a hook; an unknown one is 404', () => {
    const deleted: TenantConfigEvent = { type: 'HookDeleted', data: { name: 'audit', at } };
    spec
      .given([configured(audit)])
      .when({ type: 'DeleteHook', name: 'audit', at })
      .then([deleted]);
    expect(() =>
      tenantConfigDecider.decide(
        { type: 'DeleteHook', name: 'audit', at },
        tenantConfigDecider.initialState(),
      ),
    ).toThrow(NotFoundError);
    const state = [configured(audit), deleted].reduce(
      tenantConfigDecider.evolve,
      tenantConfigDecider.initialState(),
    );
    expect(state.hooks).toEqual({});
  });
});
