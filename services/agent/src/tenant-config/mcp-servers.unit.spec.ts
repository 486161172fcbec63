import { NotFoundError, ValidationError } from '@keel/core';
import { DeciderSpec } from '@keel/core/testing';
import type { AgentDefinition, McpServerDefinition, TenantConfigEvent } from '@keel/events';
import { EgressPolicy } from '@keel/runtime/egress';
import { describe, expect, it } from 'vitest';
import { resolveTools } from '../turn/tool-catalog.js';
import type { PutMcpServer } from './mcp-servers.js';
import { offeredMcpTools, splitMcpToolName } from './mcp-servers.js';
import { createTenantConfigDecider, tenantConfigDecider } from './tenant-config.decider.js';

const at = '2026-11-24T03:00:00.000Z';
const spec = DeciderSpec.for(tenantConfigDecider);
const schema = { type: 'object', properties: { id: { type: 'string' } } };
const listed = [
  { name: 'delete_page', description: 'Deletes a page', inputSchema: schema },
  { name: 'echo', description: 'Echoes', inputSchema: schema },
  { name: 'bad.name', description: 'Not a model tool name', inputSchema: schema },
];
const put = (overrides: Partial<PutMcpServer['server']> = {}): PutMcpServer => ({
  server: {
    name: 'cms',
    url: 'https://mcp.example.com/mcp',
    approval: 'never',
    roles: [],
    timeoutMs: 10_000,
    retryUnknown: false,
    ...overrides,
  },
  listed,
});
const configured = (server: McpServerDefinition): TenantConfigEvent => ({
  type: 'McpServerConfigured',
  data: { server, at },
});
const cms: McpServerDefinition = { ...put().server, tools: listed.slice(0, 2) };
const agent: AgentDefinition = {
  agentId: 'editor',
  model: 'openai:gpt-4o-mini',
  instructions: '',
  tools: ['cms__*', 'calculator'],
  maxSteps: 8,
  temperature: 0,
  toolResultMaxChars: 2_000,
};

const refusedField = (run: () => unknown): string | undefined => {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).field;
  }
  return undefined;
};

describe('MCP servers in the tenant configuration', () => {
  it('stores a server with the listed tools a model can name (invalid names dropped)', () => {
    spec
      .given([])
      .when({ type: 'PutMcpServer', put: put(), at })
      .then([configured(cms)]);
  });

  it('applies the allow-list, and refuses one naming a tool the server lacks (field tools)', () => {
    spec
      .given([])
      .when({ type: 'PutMcpServer', put: put({ allow: ['echo'] }), at })
      .then([configured({ ...cms, allow: ['echo'], tools: [listed[1]!] })]);
    const decide = () =>
      tenantConfigDecider.decide(
        { type: 'PutMcpServer', put: put({ allow: ['nope'] }), at },
        tenantConfigDecider.initialState(),
      );
    expect(refusedField(decide)).toBe('tools');
  });

  it('refuses a bad name, a loopback URL, a bad approval or timeout, naming the field', () => {
    const state = tenantConfigDecider.initialState();
    const decide = (p: PutMcpServer) => () =>
      tenantConfigDecider.decide({ type: 'PutMcpServer', put: p, at }, state);
    expect(refusedField(decide(put({ name: 'has_underscore' })))).toBe('name');
    // Its tools would be agent__<tool>, the names of sub-agents.
    expect(refusedField(decide(put({ name: 'agent' })))).toBe('name');
    expect(refusedField(decide(put({ url: 'http://127.0.0.1:9/mcp' })))).toBe('url');
    expect(refusedField(decide(put({ url: 'ftp://x.example.com' })))).toBe('url');
    expect(refusedField(decide(put({ approval: 'sometimes' as 'never' })))).toBe('approval');
    expect(refusedField(decide(put({ timeoutMs: 5 })))).toBe('timeoutMs');
    // KEEL_EGRESS_ALLOW opens loopback on purpose.
    const open = createTenantConfigDecider(EgressPolicy.fromAllowList('127.0.0.0/8'));
    expect(
      open.decide({ type: 'PutMcpServer', put: put({ url: 'http://127.0.0.1:9/mcp' }), at }, state),
    ).toHaveLength(1);
  });

  it('approval policies: a when object is stored; a bad one is refused naming its field', () => {
    const when = {
      when: { type: 'object', properties: { id: { const: 'home' } } },
      message: 'Delete {{args.id}}?',
    };
    spec
      .given([])
      .when({ type: 'PutMcpServer', put: put({ approval: when }), at })
      .then([configured({ ...cms, approval: when })]);
    const state = tenantConfigDecider.initialState();
    const decide = (approval: unknown) => () =>
      tenantConfigDecider.decide(
        { type: 'PutMcpServer', put: put({ approval: approval as 'never' }), at },
        state,
      );
    expect(refusedField(decide({ when: 'x' }))).toBe('approval.when');
    expect(refusedField(decide({ when: {}, message: '{{now}}' }))).toBe('approval.message');
    expect(refusedField(decide({ when: {}, exceptUserRoles: 'owner' }))).toBe('approval.exceptUserRoles');
  });

  it('agents name its tools <server>__<tool> or <server>__*; unknown ones are 400 on tools', () => {
    spec
      .given([configured(cms)])
      .when({ type: 'PutAgent', agent, at })
      .then([{ type: 'AgentConfigured', data: { agent, at } }]);
    const one = { ...agent, tools: ['cms__echo'] };
    spec
      .given([configured(cms)])
      .when({ type: 'PutAgent', agent: one, at })
      .then([{ type: 'AgentConfigured', data: { agent: one, at } }]);
    const state = [configured(cms)].reduce(tenantConfigDecider.evolve, tenantConfigDecider.initialState());
    for (const tools of [['cms__nope'], ['other__*'], ['cms__']]) {
      expect(
        refusedField(() =>
          tenantConfigDecider.decide({ type: 'PutAgent', agent: { ...agent, tools }, at }, state),
        ),
      ).toBe('tools');
    }
  });

  it('deletes a server (its tools are no longer offered); an unknown one is 404', () => {
    const deleted: TenantConfigEvent = { type: 'McpServerDeleted', data: { name: 'cms', at } };
    spec
      .given([configured(cms)])
      .when({ type: 'DeleteMcpServer', name: 'cms', at })
      .then([deleted]);
    expect(() =>
      tenantConfigDecider.decide(
        { type: 'DeleteMcpServer', name: 'cms', at },
        tenantConfigDecider.initialState(),
      ),
    ).toThrow(NotFoundError);
    const state = [configured(cms), deleted].reduce(
      tenantConfigDecider.evolve,
      tenantConfigDecider.initialState(),
    );
    expect(offeredMcpTools(['cms__*'], state.mcpServers)).toEqual([]);
  });

  it('the turn offers each tool as <server>__<tool> with the server approval and roles', () => {
    const state = [configured({ ...cms, approval: 'always', roles: ['editor'] })].reduce(
      tenantConfigDecider.evolve,
      tenantConfigDecider.initialState(),
    );
    const tools = resolveTools(['cms__*'], state, { builtins: [], validate: () => [] });
    expect(tools.map((t) => [t.name, t.approval, t.roles])).toEqual([
      ['cms__delete_page', 'always', ['editor']],
      ['cms__echo', 'always', ['editor']],
    ]);
    expect(splitMcpToolName('cms__delete_page')).toEqual({ server: 'cms', tool: 'delete_page' });
    expect(splitMcpToolName('plain')).toBeUndefined();
  });
});
