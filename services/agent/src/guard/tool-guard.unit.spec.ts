import { describe, expect, it } from 'vitest';
import type { GuardedAgent, GuardedTool, GuardInput } from './tool-guard.js';
import { guardToolCall, nextPhase } from './tool-guard.js';

const refund: GuardedTool = {
  name: 'refund',
  approval: 'always',
  roles: ['admin', 'editor'],
  phases: ['verified'],
};
const lookup: GuardedTool = { name: 'lookup_order', approval: 'never', roles: [], phases: [] };
const agent: GuardedAgent = {
  tools: ['lookup_order', 'verify_identity', 'refund'],
  phases: { initial: 'start', transitions: [{ from: 'start', tool: 'verify_identity', to: 'verified' }] },
};
const call = (over: Partial<GuardInput>): GuardInput => ({
  name: 'lookup_order',
  argErrors: [],
  tool: lookup,
  agent,
  role: 'editor',
  phase: 'start',
  ...over,
});

describe('tool guard', () => {
  it('allows a known tool with valid arguments, carrying its approval policy', () => {
    expect(guardToolCall(call({}))).toEqual({ kind: 'allow', approval: 'never' });
    expect(guardToolCall(call({ name: 'refund', tool: refund, phase: 'verified' }))).toEqual({
      kind: 'allow',
      approval: 'always',
    });
  });

  it('refuses unknown tools and tools the agent was not given, listing what exists', () => {
    const unknown = guardToolCall(call({ name: 'drop_tables', tool: undefined }));
    expect(unknown).toMatchObject({ kind: 'refuse', error: { code: 'unknown_tool' } });
    expect(JSON.stringify(unknown)).toContain('lookup_order, verify_identity, refund');
    const notGiven = guardToolCall(call({ agent: { tools: ['refund'] } }));
    expect(notGiven).toMatchObject({ kind: 'refuse', error: { code: 'unknown_tool' } });
  });

  it('applies the role matrix', () => {
    const adminOnly = { ...lookup, roles: ['admin' as const] };
    expect(guardToolCall(call({ tool: adminOnly }))).toMatchObject({ error: { code: 'forbidden_tool' } });
    expect(guardToolCall(call({ tool: adminOnly, role: 'admin' }))).toMatchObject({ kind: 'allow' });
  });

  it('refuses a tool outside its phases, suggesting the transition that unlocks it', () => {
    const verdict = guardToolCall(call({ name: 'refund', tool: refund, phase: 'start' }));
    expect(verdict).toMatchObject({ kind: 'refuse', error: { code: 'wrong_phase' } });
    expect(JSON.stringify(verdict)).toContain(
      'First call \\"verify_identity\\" to move to the \\"verified\\" phase',
    );
    expect(nextPhase(agent.phases, 'start', 'verify_identity')).toBe('verified');
    expect(nextPhase(agent.phases, 'start', 'lookup_order')).toBe('start');
    expect(nextPhase(undefined, undefined, 'x')).toBeUndefined();
  });

  it('turns invalid arguments into an error the model can act on', () => {
    const verdict = guardToolCall(call({ argErrors: [{ path: '/orderId', message: 'must be string' }] }));
    expect(verdict).toEqual({
      kind: 'refuse',
      error: {
        code: 'invalid_arguments',
        message:
          'the arguments for "lookup_order" are invalid: /orderId: must be string. Call it again with valid arguments.',
      },
    });
  });
});
