import { ResourceExhaustedError, UnavailableError, ValidationError } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { withFallbacks } from './fallback-model-step.js';
import type { ModelStepInput, ModelStepOutput } from './model-step.js';

const output = (model: string): ModelStepOutput => ({
  text: 'ok',
  toolCalls: [],
  usage: { promptTokens: 1, completionTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 },
  model,
  contextTokens: 1,
});

const input = (deltas: string[] = []): ModelStepInput => ({
  model: 'openai:gpt-4o',
  credentials: { apiKey: 'sk-a' },
  messages: [],
  tools: [],
  temperature: 0,
  signal: new AbortController().signal,
  onDelta: (text) => deltas.push(text),
  fallbacks: [
    { model: 'anthropic:claude-sonnet-4-5', credentials: { apiKey: 'sk-b' } },
    { model: 'openai:gpt-4o-mini', credentials: {} },
  ],
});

/** A step failing for each model with the error given, answering for the others; records what it was called with. */
const scripted = (failures: Record<string, Error>, calls: Array<{ model: string; apiKey?: string }>) =>
  withFallbacks(async (attempt) => {
    calls.push({
      model: attempt.model,
      ...(attempt.credentials.apiKey ? { apiKey: attempt.credentials.apiKey } : {}),
    });
    const failure = failures[attempt.model];
    if (failure) throw failure;
    return output(attempt.model);
  });

describe('withFallbacks', () => {
  it('tries the fallbacks in order, each with its own credentials, after a 429 or a 5xx', async () => {
    const calls: Array<{ model: string; apiKey?: string }> = [];
    const step = scripted(
      {
        'openai:gpt-4o': new ResourceExhaustedError('openai answered 429'),
        'anthropic:claude-sonnet-4-5': new UnavailableError('anthropic answered 529'),
      },
      calls,
    );
    expect((await step(input())).model).toBe('openai:gpt-4o-mini');
    expect(calls).toEqual([
      { model: 'openai:gpt-4o', apiKey: 'sk-a' },
      { model: 'anthropic:claude-sonnet-4-5', apiKey: 'sk-b' },
      { model: 'openai:gpt-4o-mini' },
    ]);
  });

  it('does not fall back on a bad request, nor when the last model fails', async () => {
    const calls: Array<{ model: string }> = [];
    const bad = scripted({ 'openai:gpt-4o': new ValidationError('openai answered 400') }, calls);
    await expect(bad(input())).rejects.toThrow(/400/);
    expect(calls).toHaveLength(1);
    const down = new UnavailableError('down');
    const all = scripted(
      { 'openai:gpt-4o': down, 'anthropic:claude-sonnet-4-5': down, 'openai:gpt-4o-mini': down },
      [],
    );
    await expect(all(input())).rejects.toBe(down);
  });

  it('does not fall back once text was streamed', async () => {
    const deltas: string[] = [];
    let calls = 0;
    const step = withFallbacks(async (attempt) => {
      calls += 1;
      attempt.onDelta('Hel');
      throw new UnavailableError('connection reset');
    });
    await expect(step(input(deltas))).rejects.toThrow(/connection reset/);
    expect(calls).toBe(1);
    expect(deltas).toEqual(['Hel']);
  });
});
