import type { AgentDefinition } from '@keel/events';
import { describe, expect, it } from 'vitest';
import { withDefaults } from './agent-defaults.js';

const agent: AgentDefinition = {
  agentId: 'a1',
  model: 'openai:gpt-4o',
  instructions: '',
  tools: [],
  maxSteps: 4,
  temperature: 0.3,
  toolResultMaxChars: 8_000,
};

describe('withDefaults', () => {
  it('gives the fields the PUT left out the defaults as they are now; its own fields win', () => {
    const defaults = { model: 'openai:gpt-4o-mini', temperature: 0.9, maxSteps: 12 };
    expect(withDefaults({ ...agent, fromDefaults: ['model', 'temperature'] }, defaults)).toMatchObject({
      model: 'openai:gpt-4o-mini',
      temperature: 0.9,
      maxSteps: 4,
    });
    expect(withDefaults(agent, defaults)).toEqual(agent);
  });

  it('keeps the stored value of a defaulted field the tenant has no default for', () => {
    expect(
      withDefaults({ ...agent, fromDefaults: ['maxSteps', 'temperature'] }, { model: 'x:y' }),
    ).toMatchObject({
      model: 'openai:gpt-4o',
      maxSteps: 4,
      temperature: 0.3,
    });
  });
});
