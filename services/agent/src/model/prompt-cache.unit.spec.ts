import { describe, expect, it } from 'vitest';
import { systemPrompt } from '../prompt/prompt.js';
import { lastMessageBreakpoint, systemBlocks } from './prompt-cache.js';

const agent = {
  agentId: 'a',
  model: 'anthropic:claude-sonnet-4-5',
  instructions: 'Be brief.',
  tools: [],
  maxSteps: 4,
  temperature: 0,
  toolResultMaxChars: 8000,
};

describe('prompt cache breakpoints', () => {
  it('puts the breakpoint after the stable prefix: the phase of the conversation comes after it', () => {
    const stable = systemPrompt(agent, [], {});
    const blocks = systemBlocks(systemPrompt(agent, [], { phase: 'triage' }));
    expect(blocks).toEqual([
      { type: 'text', text: stable, cache_control: { type: 'ephemeral' } },
      { type: 'text', text: '\n\n# State\nCurrent phase: triage' },
    ]);
    expect(systemBlocks(stable)).toEqual([
      { type: 'text', text: stable, cache_control: { type: 'ephemeral' } },
    ]);
  });

  it('marks the last message, unless it is the system prompt or empty', () => {
    expect(lastMessageBreakpoint([{ role: 'system', content: 's' }])).toBe(-1);
    expect(
      lastMessageBreakpoint([
        { role: 'system', content: 's' },
        { role: 'user', content: 'hi' },
      ]),
    ).toBe(1);
    expect(
      lastMessageBreakpoint([
        { role: 'system', content: 's' },
        { role: 'assistant', content: '' },
      ]),
    ).toBe(-1);
  });
});
