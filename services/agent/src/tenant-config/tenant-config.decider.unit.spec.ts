import { ValidationError } from '@keel/core';
import { DeciderSpec } from '@keel/core/testing';
import type { AgentDefinition, TenantConfigEvent, ToolDefinition } from '@keel/events';
import { describe, expect, it } from 'vitest';
import { tenantConfigDecider } from './tenant-config.decider.js';

const at = '2026-11-21T10:00:00.000Z';
const spec = DeciderSpec.for(tenantConfigDecider);
const tool: ToolDefinition = {
  name: 'get_weather',
  description: 'Weather for a city',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  kind: 'webhook',
  url: 'https://tools.example.com/weather',
  approval: 'always',
  roles: ['editor', 'admin'],
  phases: [],
  timeoutMs: 10_000,
};
const agent: AgentDefinition = {
  agentId: 'support',
  model: 'openai:gpt-4o-mini',
  instructions: 'Be brief.',
  tools: ['get_weather', 'calculator'],
  maxSteps: 8,
  temperature: 0,
  toolResultMaxChars: 2_000,
};
const toolConfigured: TenantConfigEvent = { type: 'ToolConfigured', data: { tool, at } };

const refusedField = (run: () => unknown): string | undefined => {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).field;
  }
  return undefined;
};

describe('tenant configuration', () => {
  it('stores tools and agents that reference tenant tools and built-ins', () => {
    spec.given([]).when({ type: 'PutTool', tool, at }).then([toolConfigured]);
    spec
      .given([toolConfigured])
      .when({ type: 'PutAgent', agent, at })
      .then([{ type: 'AgentConfigured', data: { agent, at } }]);
  });

  it('refuses bad definitions naming the field, and writes nothing', () => {
    const decide = (over: Partial<ToolDefinition>) => () =>
      tenantConfigDecider.decide(
        { type: 'PutTool', tool: { ...tool, ...over }, at },
        tenantConfigDecider.initialState(),
      );
    expect(refusedField(decide({ name: 'calculator' }))).toBe('name');
    expect(refusedField(decide({ name: '1bad' }))).toBe('name');
    expect(refusedField(decide({ inputSchema: { type: 'string' } }))).toBe('inputSchema');
    expect(refusedField(decide({ url: 'ftp://x' }))).toBe('url');
    expect(refusedField(decide({ url: 'https://user:pw@x.example' }))).toBe('url');
    expect(refusedField(decide({ approval: 'sometimes' as never }))).toBe('approval');
    expect(refusedField(decide({ roles: ['root' as never] }))).toBe('roles');
    expect(refusedField(decide({ timeoutMs: 0 }))).toBe('timeoutMs');
    const state = [toolConfigured].reduce(tenantConfigDecider.evolve, tenantConfigDecider.initialState());
    const put = (over: Partial<AgentDefinition>) => () =>
      tenantConfigDecider.decide({ type: 'PutAgent', agent: { ...agent, ...over }, at }, state);
    expect(refusedField(put({ tools: ['get_weather', 'nope'] }))).toBe('tools');
    expect(refusedField(put({ model: 'gpt-4o' }))).toBe('model');
    expect(refusedField(put({ model: 'skynet:gpt-9' }))).toBe('model');
    expect(refusedField(put({ maxSteps: 0 }))).toBe('maxSteps');
    expect(refusedField(put({ temperature: 3 }))).toBe('temperature');
    expect(refusedField(put({ phases: { initial: 'a', transitions: [{ tool: 'missing', to: 'b' }] } }))).toBe(
      'phases.transitions',
    );
    expect(
      refusedField(() => tenantConfigDecider.decide({ type: 'PutProvider', provider: 'acme-ai', at }, state)),
    ).toBe('provider');
  });

  it('keeps provider keys and the webhook secret sealed in the state', () => {
    const sealed = { v: 1 as const, iv: 'aXY=', tag: 'dGFn', data: 'ZGF0YQ==' };
    const events = tenantConfigDecider.decide(
      { type: 'PutProvider', provider: 'openai', apiKey: sealed, baseUrl: 'http://127.0.0.1:9999/v1', at },
      tenantConfigDecider.initialState(),
    );
    const state = [
      ...events,
      { type: 'WebhookSecretRotated', data: { secret: sealed, at } } as TenantConfigEvent,
    ].reduce(tenantConfigDecider.evolve, tenantConfigDecider.initialState());
    expect(state.providers.openai).toEqual({ apiKey: sealed, baseUrl: 'http://127.0.0.1:9999/v1' });
    expect(state.webhookSecret).toEqual(sealed);
  });
});
