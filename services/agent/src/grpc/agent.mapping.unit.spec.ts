import { PermissionDeniedError, ValidationError } from '@keel/core';
import { ConversationStatus, Decision, MessageRole } from '@keel/proto/keel/conversations/v1/conversations';
import { describe, expect, it } from 'vitest';
import {
  agentDefinitionOf,
  conversationMessage,
  decisionOf,
  ifBusyOf,
  toolDefinitionOf,
} from './agent.mapping.js';
import { ADMIN, EDITOR, VIEWER, callContextOf } from './call-context.js';
import { AjvToolCatalog } from './tool-catalog.provider.js';

const context = (role: string, overrides: Record<string, unknown> = {}) => ({
  tenantId: 'acme',
  actor: { keyId: 'key-1', role, userId: '' },
  correlationId: 'req-1',
  ...overrides,
});

const fieldOf = (run: () => unknown): string | undefined => {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return error.field;
    throw error;
  }
  throw new Error('no ValidationError');
};

describe('callContextOf', () => {
  it('resolves the runtime context; the acting user defaults to the key', () => {
    expect(callContextOf(context('editor'), EDITOR)).toEqual({
      tenantId: 'acme',
      keyId: 'key-1',
      role: 'editor',
      userId: 'key-1',
      correlationId: 'req-1',
    });
    expect(callContextOf(context('viewer', { correlationId: '' }), VIEWER).correlationId).toMatch(
      /^[0-9a-f-]{36}$/,
    );
  });

  it('applies the role matrix: admin for configuration, editor or admin for writes, any tenant role for reads', () => {
    const allowed = (role: string, access: typeof ADMIN) => {
      try {
        callContextOf(context(role), access);
        return true;
      } catch (error) {
        if (error instanceof PermissionDeniedError) return false;
        throw error;
      }
    };
    const roles = ['admin', 'editor', 'viewer', 'operator'];
    expect(roles.map((role) => allowed(role, ADMIN))).toEqual([true, false, false, false]);
    expect(roles.map((role) => allowed(role, EDITOR))).toEqual([true, true, false, false]);
    expect(roles.map((role) => allowed(role, VIEWER))).toEqual([true, true, true, false]);
  });

  it('names what is missing', () => {
    expect(fieldOf(() => callContextOf(undefined, VIEWER))).toBe('context');
    expect(fieldOf(() => callContextOf(context('viewer', { tenantId: ' ' }), VIEWER))).toBe(
      'context.tenantId',
    );
    expect(fieldOf(() => callContextOf(context('viewer', { actor: undefined }), VIEWER))).toBe(
      'context.actor',
    );
    expect(
      fieldOf(() =>
        callContextOf(context('viewer', { actor: { keyId: '', role: 'viewer', userId: '' } }), VIEWER),
      ),
    ).toBe('context.actor.keyId');
    expect(fieldOf(() => callContextOf(context('root'), VIEWER))).toBe('context.actor.role');
  });
});

describe('enums from the wire', () => {
  it('reads names (as Nest hands them over) and numbers (as ts-proto types them)', () => {
    expect(
      ['IF_BUSY_UNSPECIFIED', 'IF_BUSY_REJECT', 'IF_BUSY_ENQUEUE', 'IF_BUSY_INTERRUPT'].map(ifBusyOf),
    ).toEqual(['reject', 'reject', 'enqueue', 'interrupt']);
    expect([undefined, 0, 2, 3].map(ifBusyOf)).toEqual(['reject', 'reject', 'enqueue', 'interrupt']);
    expect(decisionOf('DECISION_DENY')).toBe('deny');
    expect(decisionOf(Decision.APPROVE)).toBe('approve');
    expect(fieldOf(() => decisionOf('DECISION_UNSPECIFIED'))).toBe('request.decision');
    expect(fieldOf(() => ifBusyOf(9))).toBe('request.ifBusy');
  });
});

describe('configuration requests', () => {
  const tool = {
    name: 'get_weather',
    description: 'Weather.',
    inputSchemaJson: '{"type":"object"}',
    kind: '',
    url: 'https://example.com/weather',
    approval: '',
    roles: [],
    phases: [],
    timeoutMs: 0,
    builtin: true,
    memoryJson: '',
    affects: [],
    userRoles: [],
    outputSchemaJson: '',
  };

  it('fills the API defaults of a tool and parses its schema', () => {
    expect(toolDefinitionOf(tool)).toEqual({
      name: 'get_weather',
      description: 'Weather.',
      inputSchema: { type: 'object' },
      kind: 'webhook',
      url: 'https://example.com/weather',
      approval: 'never',
      roles: [],
      phases: [],
      timeoutMs: 10_000,
    });
    expect(fieldOf(() => toolDefinitionOf({ ...tool, inputSchemaJson: '[1]' }))).toBe('tool.inputSchemaJson');
    expect(fieldOf(() => toolDefinitionOf({ ...tool, inputSchemaJson: '' }))).toBe('tool.inputSchemaJson');
    // Nested past 32 levels (10,000 here): refused before the schema compiler recurses into it.
    const deep = `{"type":"object","p":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}`;
    expect(fieldOf(() => toolDefinitionOf({ ...tool, inputSchemaJson: deep }))).toBe('tool.inputSchemaJson');
  });

  it('fills the defaults of an agent and reads its phases', () => {
    const agent = {
      agentId: 'a1',
      model: 'demo:keel-demo',
      instructions: '',
      tools: ['lookup'],
      maxSteps: 0,
      temperature: 0.5,
      toolResultMaxChars: 0,
      phasesJson: '{"initial":"triage","transitions":[{"tool":"lookup","to":"answer"}]}',
      optionsJson: '',
      fromDefaults: [] as string[],
    };
    expect(agentDefinitionOf(agent)).toEqual({
      agentId: 'a1',
      model: 'demo:keel-demo',
      instructions: '',
      tools: ['lookup'],
      maxSteps: 8,
      temperature: 0.5,
      toolResultMaxChars: 8_000,
      phases: { initial: 'triage', transitions: [{ tool: 'lookup', to: 'answer' }] },
    });
    expect(agentDefinitionOf({ ...agent, phasesJson: '' }).phases).toBeUndefined();
    // The fields the PUT left out, kept in a fixed order; another name is refused.
    expect(agentDefinitionOf({ ...agent, fromDefaults: ['maxSteps', 'model'] }).fromDefaults).toEqual([
      'model',
      'maxSteps',
    ]);
    expect(fieldOf(() => agentDefinitionOf({ ...agent, fromDefaults: ['colour'] }))).toBe(
      'agent.fromDefaults[0]',
    );
    expect(
      fieldOf(() => agentDefinitionOf({ ...agent, phasesJson: '{"initial":"x","transitions":[{"to":1}]}' })),
    ).toBe('agent.phasesJson');
  });
});

describe('conversationMessage', () => {
  it('maps the view: status and roles as enums, arguments as JSON text', () => {
    const message = conversationMessage({
      id: 'c1',
      agentId: 'helper',
      status: 'awaiting_approval',
      version: 7,
      createdAt: '2026-01-01T00:00:00.000Z',
      messages: [
        { id: 'm1', role: 'user', content: 'hi' },
        {
          id: 'm2',
          role: 'assistant',
          content: '',
          toolCalls: [{ toolCallId: 't1', name: 'get_weather', args: { city: 'Oslo' } }],
        },
        { id: 'tool-t0', role: 'tool', content: '{"ok":1}', toolCallId: 't0', ok: true },
      ],
      pendingApprovals: [
        {
          approvalId: 'a1',
          toolCallId: 't1',
          tool: 'get_weather',
          args: { city: 'Oslo' },
          requestedAt: 'now',
        },
      ],
      pendingClientCalls: [
        { toolCallId: 't2', tool: 'read_page', args: { id: 'p1' }, deadline: '2026-01-01T00:01:30.000Z' },
      ],
      usage: { promptTokens: 10, completionTokens: 2, costUsd: 0 },
      contextTokens: 10,
      entities: [
        { type: 'city', id: 'oslo', label: 'Oslo' },
        { type: 'city', id: 'bergen' },
      ],
    });
    expect(message).toEqual({
      id: 'c1',
      agentId: 'helper',
      title: '',
      status: ConversationStatus.AWAITING_APPROVAL,
      version: 7,
      userId: '',
      createdAt: '2026-01-01T00:00:00.000Z',
      metadata: {},
      messages: [
        { id: 'm1', role: MessageRole.USER, content: 'hi', toolCalls: [] },
        {
          id: 'm2',
          role: MessageRole.ASSISTANT,
          content: '',
          toolCalls: [{ id: 't1', name: 'get_weather', argsJson: '{"city":"Oslo"}' }],
        },
        { id: 'tool-t0', role: MessageRole.TOOL, content: '{"ok":1}', toolCalls: [], toolCallId: 't0' },
      ],
      pendingApprovals: [
        {
          approvalId: 'a1',
          toolCallId: 't1',
          tool: 'get_weather',
          argsJson: '{"city":"Oslo"}',
          requestedAt: 'now',
        },
      ],
      pendingClientCalls: [
        {
          toolCallId: 't2',
          tool: 'read_page',
          argsJson: '{"id":"p1"}',
          deadline: '2026-01-01T00:01:30.000Z',
        },
      ],
      usage: { promptTokens: 10, completionTokens: 2, costUsd: 0 },
      contextTokens: 10,
      entities: [
        { type: 'city', id: 'oslo', label: 'Oslo' },
        { type: 'city', id: 'bergen' },
      ],
    });
  });
});

describe('conversationMessage with what creation gave', () => {
  it('carries the title and metadata of the view', () => {
    const message = conversationMessage({
      id: 'c1',
      agentId: 'helper',
      status: 'idle',
      version: 1,
      createdAt: '2026-01-01T00:00:00.000Z',
      title: 'Weather',
      metadata: { ticket: 'T-1' },
      messages: [],
      pendingApprovals: [],
      pendingClientCalls: [],
      usage: { promptTokens: 0, completionTokens: 0, costUsd: 0 },
      contextTokens: 0,
      entities: [],
    });
    expect(message).toMatchObject({ title: 'Weather', metadata: { ticket: 'T-1' } });
  });
});

describe('AjvToolCatalog', () => {
  const catalog = new AjvToolCatalog();

  it('knows the two built-ins', () => {
    expect(catalog.builtins.map((b) => b.name)).toEqual(['current_time', 'calculator']);
    expect(catalog.builtins.find((b) => b.name === 'calculator')?.inputSchema).toMatchObject({
      required: ['expression'],
    });
  });

  it('checks arguments against a schema and says where they are wrong', () => {
    const calculator = catalog.builtins.find((b) => b.name === 'calculator')!.inputSchema;
    expect(catalog.validate(calculator, { expression: '1+1' })).toEqual([]);
    expect(catalog.validate(calculator, {})).toEqual([{ path: '$.expression', message: 'is required' }]);
  });

  it('refuses a schema that does not compile, naming inputSchema', () => {
    expect(
      fieldOf(() => catalog.assertToolSchema({ type: 'object', properties: { a: { type: 'nonsense' } } })),
    ).toBe('inputSchema');
    expect(catalog.validate({ type: 'object', properties: { a: { type: 'nonsense' } } }, {})).toEqual([
      { path: '$', message: expect.stringContaining('inputSchema') },
    ]);
  });
});
