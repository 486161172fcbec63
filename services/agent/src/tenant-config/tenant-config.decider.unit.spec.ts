import { ValidationError } from '@keel/core';
import { DeciderSpec } from '@keel/core/testing';
import type { AgentDefinition, TenantConfigEvent, ToolDefinition } from '@keel/events';
import { describe, expect, it } from 'vitest';
import { EgressPolicy } from '@keel/runtime/egress';
import { createTenantConfigDecider, tenantConfigDecider } from './tenant-config.decider.js';

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
    expect(refusedField(decide({ name: 'agent__researcher' }))).toBe('name');
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
      { type: 'PutProvider', provider: 'openai', apiKey: sealed, baseUrl: 'https://llm.example.com/v1', at },
      tenantConfigDecider.initialState(),
    );
    const state = [
      ...events,
      { type: 'WebhookSecretRotated', data: { secret: sealed, at } } as TenantConfigEvent,
    ].reduce(tenantConfigDecider.evolve, tenantConfigDecider.initialState());
    expect(state.providers.openai).toEqual({ apiKey: sealed, baseUrl: 'https://llm.example.com/v1' });
    expect(state.webhookSecret).toEqual(sealed);
  });
});

describe('tenant-aimed URLs (egress policy, API.md "Egress")', () => {
  const sealed = { v: 1 as const, iv: 'aXY=', tag: 'dGFn', data: 'ZGF0YQ==' };
  const empty = tenantConfigDecider.initialState();
  const refusal = (run: () => unknown): { field: string | undefined; message: string } => {
    try {
      run();
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationError);
      return { field: (error as ValidationError).field, message: (error as Error).message };
    }
    throw new Error('not refused');
  };
  const putTool =
    (url: string, decider = tenantConfigDecider) =>
    () =>
      decider.decide({ type: 'PutTool', tool: { ...tool, url }, at }, empty);
  const putProvider = (provider: string, fields: { apiKey?: typeof sealed; baseUrl?: string }) => () =>
    tenantConfigDecider.decide({ type: 'PutProvider', provider, ...fields, at }, empty);

  it.each([
    'http://127.0.0.1:8080/metrics',
    'http://169.254.169.254/latest/meta-data/',
    'http://10.0.0.1/',
    'http://2130706433/',
    'http://0x7f.1/',
    'http://0177.0.0.1/',
    'http://[::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[fd00::1]/',
    'http://localhost:9/',
    'http://LOCALHOST./',
    'http://metrics.localhost/',
  ])('refuses the tool url %s naming url', (url) => {
    const { field, message } = refusal(putTool(url));
    expect(field).toBe('url');
    expect(message).toMatch(/^url must point to a public address: /);
  });

  it('stores a public or named tool url (a name is checked at each call)', () => {
    expect(putTool('https://hooks.example.com/x')()).toHaveLength(1);
    expect(putTool('http://8.8.8.8/x')()).toHaveLength(1);
  });

  it('honours the allow list it is built with (the dev mode opens loopback)', () => {
    const dev = createTenantConfigDecider(EgressPolicy.fromAllowList('127.0.0.0/8,::1/128'));
    expect(putTool('http://127.0.0.1:8080/hook', dev)()).toHaveLength(1);
    expect(putTool('http://localhost:8080/hook', dev)()).toHaveLength(1);
    expect(refusal(putTool('http://169.254.169.254/', dev)).field).toBe('url');
  });

  it('refuses a provider baseUrl without its own apiKey, naming apiKey', () => {
    for (const provider of ['openai', 'anthropic']) {
      const { field, message } = refusal(putProvider(provider, { baseUrl: 'https://attacker.example/v1' }));
      expect(field).toBe('apiKey');
      expect(message).toMatch(/^apiKey is required with baseUrl/);
      // The attack on the platform key: the attacker's server, wherever it is, and no key of its own.
      expect(refusal(putProvider(provider, { baseUrl: 'http://127.0.0.1:9999/v1' })).field).toBe('apiKey');
    }
    expect(putProvider('openai', { apiKey: sealed, baseUrl: 'https://llm.example.com/v1' })()).toHaveLength(
      1,
    );
    expect(putProvider('openai', { apiKey: sealed })()).toHaveLength(1);
  });

  it('refuses a provider baseUrl on a refused literal, naming baseUrl', () => {
    for (const baseUrl of [
      'http://127.0.0.1:11434',
      'http://169.254.169.254',
      'http://[::ffff:10.0.0.1]/v1',
    ]) {
      expect(refusal(putProvider('openai', { apiKey: sealed, baseUrl })).field).toBe('baseUrl');
      expect(refusal(putProvider('ollama', { baseUrl })).field).toBe('baseUrl');
    }
  });

  it('lets an Ollama baseUrl go without a key (no platform key exists), refuses any Google baseUrl', () => {
    expect(putProvider('ollama', { baseUrl: 'https://ollama.example.com' })()).toHaveLength(1);
    const google = refusal(putProvider('google', { apiKey: sealed, baseUrl: 'https://llm.example.com' }));
    expect(google.field).toBe('baseUrl');
    expect(google.message).toMatch(/^baseUrl cannot be set for google/);
  });
});

describe('tenant configuration evolve', () => {
  it('keeps the state for an event type it does not know (it returned undefined)', () => {
    const { evolve, initialState } = tenantConfigDecider;
    const state = evolve(initialState(), toolConfigured);
    const unknown = { type: 'FromANewerWriter', data: {} } as unknown as TenantConfigEvent;
    expect(evolve(state, unknown)).toEqual(state);
  });
});
