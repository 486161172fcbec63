import { ValidationError } from '@keel/core';
import type { AgentDefinition, TenantConfigEvent, ToolDefinition } from '@keel/events';
import { describe, expect, it } from 'vitest';
import { resolveTools } from '../turn/tool-catalog.js';
import type { TenantConfig } from './tenant-config.decider.js';
import {
  MAX_AGENT_TOOLS,
  MAX_CONFIG_BYTES,
  MAX_DEFINITIONS_PER_TENANT,
  tenantConfigDecider,
} from './tenant-config.decider.js';

const at = '2026-11-21T10:00:00.000Z';
const PROTOTYPE_NAMES = ['toString', 'constructor', 'valueOf', 'hasOwnProperty', 'isPrototypeOf'];
const tool = (name: string): ToolDefinition => ({
  name,
  description: 'A tool',
  inputSchema: { type: 'object' },
  kind: 'webhook',
  url: 'https://tools.example.com/x',
  approval: 'never',
  roles: [],
  phases: [],
  timeoutMs: 10_000,
});
const agent = (tools: string[]): AgentDefinition => ({
  agentId: 'a',
  model: 'openai:gpt-4o-mini',
  instructions: '',
  tools,
  maxSteps: 8,
  temperature: 0,
  toolResultMaxChars: 2_000,
});
const fold = (events: TenantConfigEvent[]): TenantConfig =>
  events.reduce(tenantConfigDecider.evolve, tenantConfigDecider.initialState());
const refusal = (run: () => unknown): ValidationError => {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error('not refused');
};
const catalog = { builtins: [], validate: () => [] };

describe('tenant configuration with prototype names as ids', () => {
  it('an agent naming a prototype member as a tool is refused: no such tool', () => {
    for (const name of PROTOTYPE_NAMES) {
      const error = refusal(() =>
        tenantConfigDecider.decide({ type: 'PutAgent', agent: agent([name]), at }, fold([])),
      );
      expect(error.field).toBe('tools');
      expect(error.message).toContain(name);
    }
  });

  it('resolves no tool and no agent for prototype names the tenant never defined', () => {
    const config = fold([]);
    expect(resolveTools(PROTOTYPE_NAMES, config, catalog)).toEqual([]);
    for (const name of [...PROTOTYPE_NAMES, '__proto__']) {
      expect(Object.hasOwn(config.agents, name)).toBe(false);
    }
  });

  it('refuses prototype member names as tool names and agent ids', () => {
    for (const name of PROTOTYPE_NAMES) {
      const putTool = () => tenantConfigDecider.decide({ type: 'PutTool', tool: tool(name), at }, fold([]));
      expect(refusal(putTool).field).toBe('name');
      const putAgent = () =>
        tenantConfigDecider.decide(
          { type: 'PutAgent', agent: { ...agent([]), agentId: name }, at },
          fold([]),
        );
      expect(refusal(putAgent).field).toBe('agentId');
    }
  });

  it('a tool and an agent named `constructor` by events written before that are ordinary entries', () => {
    const events: TenantConfigEvent[] = [
      { type: 'ToolConfigured', data: { tool: tool('constructor'), at } },
      { type: 'AgentConfigured', data: { agent: { ...agent(['constructor']), agentId: 'toString' }, at } },
    ];
    const config = fold(events);
    expect(Object.keys(config.tools)).toEqual(['constructor']);
    expect(resolveTools(['constructor'], config, catalog).map((t) => t.description)).toEqual(['A tool']);
    expect(Object.keys(config.agents)).toEqual(['toString']);
    // Kept through a snapshot (JSON) as well.
    const copy = JSON.parse(JSON.stringify(config)) as TenantConfig;
    expect(resolveTools(['constructor', 'valueOf'], copy, catalog)).toHaveLength(1);
  });
});

describe('bounds of one configuration request', () => {
  it('refuses more than 128 tools before looking any up, with a short detail', () => {
    const many = Array.from({ length: 100_000 }, (_, i) => `t${i}`);
    const started = performance.now();
    const error = refusal(() =>
      tenantConfigDecider.decide({ type: 'PutAgent', agent: agent(many), at }, fold([])),
    );
    expect(error.field).toBe('tools');
    expect(error.message).toContain(`at most ${MAX_AGENT_TOOLS}`);
    expect(performance.now() - started).toBeLessThan(100);
  });

  it('names at most five unknown tools in the detail', () => {
    const error = refusal(() =>
      tenantConfigDecider.decide(
        { type: 'PutAgent', agent: agent(Array.from({ length: 100 }, (_, i) => `t${i}`)), at },
        fold([]),
      ),
    );
    expect(error.message).toBe('unknown tools: t0, t1, t2, t3, t4 and 95 more');
  });

  it('refuses an inputSchema over 64 KiB', () => {
    const big = { ...tool('big'), inputSchema: { type: 'object', description: 'x'.repeat(70_000) } };
    expect(
      refusal(() => tenantConfigDecider.decide({ type: 'PutTool', tool: big, at }, fold([]))).field,
    ).toBe('inputSchema');
  });
});

describe('bounds of one tenant', () => {
  it('holds at most 2 MiB of definitions in all; replacing one by a smaller one is always allowed', () => {
    const big = (name: string): ToolDefinition => ({
      ...tool(name),
      inputSchema: { type: 'object', description: 'x'.repeat(60_000) },
    });
    const events: TenantConfigEvent[] = Array.from({ length: 34 }, (_, i) => ({
      type: 'ToolConfigured',
      data: { tool: big(`t${i}`), at },
    }));
    const nearlyFull = fold(events);
    expect(
      refusal(() => tenantConfigDecider.decide({ type: 'PutTool', tool: big('t99'), at }, nearlyFull)).field,
    ).toBe('inputSchema');
    const longAgent = { ...agent([]), instructions: 'i'.repeat(100_000) };
    expect(
      refusal(() => tenantConfigDecider.decide({ type: 'PutAgent', agent: longAgent, at }, nearlyFull)).field,
    ).toBe('instructions');
    expect(tenantConfigDecider.decide({ type: 'PutTool', tool: big('t3'), at }, nearlyFull)).toHaveLength(1);
    expect(tenantConfigDecider.decide({ type: 'PutTool', tool: tool('small'), at }, nearlyFull)).toHaveLength(
      1,
    );
    expect(MAX_CONFIG_BYTES).toBe(2 * 1024 * 1024);
  });

  it('holds at most 500 tools; replacing one of them is still allowed', () => {
    const events: TenantConfigEvent[] = Array.from({ length: MAX_DEFINITIONS_PER_TENANT }, (_, i) => ({
      type: 'ToolConfigured',
      data: { tool: tool(`t${i}`), at },
    }));
    const full = fold(events);
    expect(
      refusal(() => tenantConfigDecider.decide({ type: 'PutTool', tool: tool('one_more'), at }, full)).field,
    ).toBe('name');
    expect(tenantConfigDecider.decide({ type: 'PutTool', tool: tool('t7'), at }, full)).toHaveLength(1);
  });
});
