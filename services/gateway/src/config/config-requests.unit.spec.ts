import { ValidationError } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { parsePutAgent, parsePutProvider, parsePutTool } from './config-requests.js';
import { agentView, toolView } from './config-views.js';

const refusal = (run: () => unknown): string => {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).message;
  }
  throw new Error('accepted');
};

const schema = { type: 'object', properties: { city: { type: 'string' } } };

describe('tenant configuration bodies', () => {
  it('maps a tool body to the agent message with the schema as JSON text, and back', () => {
    const tool = parsePutTool('get_weather', {
      description: 'Weather',
      inputSchema: schema,
      url: 'http://x/tool',
      approval: 'always',
    });
    expect(tool).toEqual({
      name: 'get_weather',
      description: 'Weather',
      inputSchemaJson: JSON.stringify(schema),
      kind: 'webhook',
      url: 'http://x/tool',
      approval: 'always',
      roles: [],
      phases: [],
      timeoutMs: 10_000, // absent: API.md's default; given, it must be in range
      memoryJson: '',
      affects: [],
      outputSchemaJson: '',
      userRoles: [],
    });
    expect(toolView({ ...tool, timeoutMs: 10_000, builtin: false })).toMatchObject({
      inputSchema: schema,
      timeoutMs: 10_000,
      builtin: false,
    });
  });

  it('refuses unknown fields and wrong types, naming the field', () => {
    expect(refusal(() => parsePutTool('t', { inputSchema: schema, color: 'red' }))).toMatch(
      /^color: unknown field/,
    );
    expect(refusal(() => parsePutTool('t', { inputSchema: 'object' }))).toMatch(/^inputSchema /);
    expect(refusal(() => parsePutTool('t', { inputSchema: schema, timeoutMs: '10' }))).toMatch(/^timeoutMs /);
    expect(refusal(() => parsePutTool('t', { inputSchema: schema, approval: 'sometimes' }))).toMatch(
      /^approval must be "never", "always" or \{ "when"/,
    );
    expect(refusal(() => parsePutAgent('a', { model: 'openai:x', tools: 'calculator' }))).toMatch(/^tools /);
    expect(refusal(() => parsePutAgent('a', { model: 'openai:x', temperature: 'hot' }))).toMatch(
      /^temperature /,
    );
    expect(refusal(() => parsePutAgent('a', { tools: [] }))).toMatch(/^model /);
    expect(refusal(() => parsePutProvider('openai', { apiKey: 42 }))).toMatch(/^apiKey /);
    expect(refusal(() => parsePutProvider('acme', {}))).toMatch(/^provider must be one of openai/);
    expect(refusal(() => parsePutTool('t', [1]))).toMatch(/^body must be a JSON object/);
  });

  it("keeps a tool's affects unique and refuses more than 20 or odd names, naming affects", () => {
    const tool = parsePutTool('t', { inputSchema: schema, affects: ['pages', 'schema', 'pages'] });
    expect(tool.affects).toEqual(['pages', 'schema']);
    expect(toolView({ ...tool, builtin: false }).affects).toEqual(['pages', 'schema']);
    const many = Array.from({ length: 21 }, (_, i) => `r${i}`);
    expect(refusal(() => parsePutTool('t', { inputSchema: schema, affects: many }))).toMatch(/^affects /);
    expect(refusal(() => parsePutTool('t', { inputSchema: schema, affects: ['a b'] }))).toMatch(/^affects /);
    expect(refusal(() => parsePutTool('t', { inputSchema: schema, affects: 'pages' }))).toMatch(/^affects /);
  });

  it('maps an agent body and shows the stored agent with its id', () => {
    const agent = parsePutAgent('helper', {
      model: 'openai:gpt-4o-mini',
      tools: ['calculator'],
      maxSteps: 4,
    });
    expect(agent).toMatchObject({ agentId: 'helper', tools: ['calculator'], maxSteps: 4, phasesJson: '' });
    expect(agentView({ ...agent, toolResultMaxChars: 8000 })).toEqual({
      id: 'helper',
      model: 'openai:gpt-4o-mini',
      instructions: '',
      tools: ['calculator'],
      maxSteps: 4,
      temperature: 0,
      toolResultMaxChars: 8000,
    });
  });
});
