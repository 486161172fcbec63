import { describe, expect, it } from 'vitest';
import { classifyIntent, narrowTools } from './intents.js';

const intents = [
  {
    name: 'edit_content',
    keywords: ['change', 'update', 'edit'],
    tools: ['update_page'],
    guidance: 'Confirm first.',
  },
  { name: 'read_content', keywords: ['show', 'find'], tools: ['get_page'] },
];
const tools = [{ name: 'get_page' }, { name: 'update_page' }, { name: 'calculator' }];

describe('intents', () => {
  it('classifies by whole-word keywords, case-insensitively, with a confidence', () => {
    expect(classifyIntent('Please UPDATE the pricing page', intents)).toEqual({
      intent: intents[0],
      confidence: 1,
    });
    expect(classifyIntent('find the page and change it', intents)).toEqual({
      intent: intents[0],
      confidence: 0.5,
    });
    expect(classifyIntent('Find it, show it, then edit it', intents)).toEqual({
      intent: intents[1],
      confidence: 0.67,
    });
    expect(classifyIntent('updates are nice', intents)).toBeUndefined();
    expect(classifyIntent('anything', undefined)).toBeUndefined();
  });

  it('narrows the tools to the intent’s, or offers all without a match', () => {
    expect(narrowTools(tools, classifyIntent('update it', intents))).toEqual([{ name: 'update_page' }]);
    expect(narrowTools(tools, undefined)).toEqual(tools);
  });
});
