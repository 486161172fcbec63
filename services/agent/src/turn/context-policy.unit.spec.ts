import { describe, expect, it } from 'vitest';
import type { PromptMessage } from '../prompt/prompt.js';
import { applyContextPolicy, estimateTokens, toolResultStub } from './context-policy.js';

/** The prompt of step `steps + 1` of a turn whose every step called `search` and got `resultChars` characters back. */
const toolHeavyPrompt = (steps: number, resultChars: number): PromptMessage[] => {
  const messages: PromptMessage[] = [
    { role: 'system', content: 'You are an assistant.' },
    { role: 'user', content: 'Research everything.' },
  ];
  for (let step = 1; step <= steps; step++) {
    const id = `call-${step}`;
    messages.push({
      role: 'assistant',
      content: '',
      toolCalls: [{ id, name: 'search', args: { q: `page ${step}` } }],
    });
    messages.push({ role: 'tool', toolCallId: id, content: `${step}:`.padEnd(resultChars, 'x') });
  }
  return messages;
};

const contents = (messages: PromptMessage[]): string[] => messages.map((m) => m.content);

describe('applyContextPolicy', () => {
  it('changes nothing without a policy', () => {
    const prompt = toolHeavyPrompt(5, 10_000);
    expect(applyContextPolicy(prompt, undefined)).toEqual({
      messages: prompt,
      stubbed: [],
      contextTokens: estimateTokens(prompt),
    });
  });

  it('stubs older results beyond the last keepToolResults, naming the tool call, and keeps the rest as they are', () => {
    const prompt = toolHeavyPrompt(5, 100);
    const { messages, stubbed } = applyContextPolicy(prompt, { keepToolResults: 2 });
    expect(stubbed).toEqual(['call-1', 'call-2', 'call-3']);
    expect(messages[3]).toEqual({
      role: 'tool',
      toolCallId: 'call-1',
      content: toolResultStub('call-1', 'search', 100),
    });
    expect(messages.slice(9)).toEqual(prompt.slice(9));
    expect(messages.filter((m) => m.role !== 'tool')).toEqual(prompt.filter((m) => m.role !== 'tool'));
  });

  it('stubs an older result over heavyResultChars (default 4000) but never the latest step’s', () => {
    const prompt = toolHeavyPrompt(3, 5_000);
    expect(applyContextPolicy(prompt, {}).stubbed).toEqual(['call-1', 'call-2']);
    expect(applyContextPolicy(prompt, { heavyResultChars: 6_000 }).stubbed).toEqual([]);
    expect(applyContextPolicy(prompt, { keepToolResults: 0 }).stubbed).toEqual(['call-1', 'call-2']);
  });

  it('stubs the oldest full results until the estimate fits maxContextTokens', () => {
    const prompt = toolHeavyPrompt(10, 2_000); // ~500 tokens a result
    const { stubbed, contextTokens } = applyContextPolicy(prompt, { maxContextTokens: 2_000 });
    expect(contextTokens).toBeLessThanOrEqual(2_000);
    expect(stubbed[0]).toBe('call-1');
    // Only as many as needed: the newest older result is still in full.
    expect(stubbed).not.toContain('call-9');
  });

  it('keeps a 40-step tool-heavy turn under maxContextTokens at every step, where without it the prompt grows without bound', () => {
    const policy = { maxContextTokens: 8_000, keepToolResults: 3, heavyResultChars: 4_000 };
    for (let step = 1; step <= 40; step++) {
      const prompt = toolHeavyPrompt(step, 3_000);
      const { contextTokens, messages } = applyContextPolicy(prompt, policy);
      expect(contextTokens).toBeLessThanOrEqual(8_000);
      expect(estimateTokens(messages)).toBe(contextTokens);
      // Every result is still named in the prompt: stubbed or in full.
      for (let s = 1; s <= step; s++)
        expect(contents(messages).some((c) => c.includes(`call-${s}`) || c.startsWith(`${s}:`))).toBe(true);
    }
    expect(estimateTokens(toolHeavyPrompt(40, 3_000))).toBeGreaterThan(30_000);
  });
});
