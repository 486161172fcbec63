import { ValidationError } from '@keel/core';
import { describe, expect, it } from 'vitest';
import type { PromptMessage } from '../prompt/prompt.js';
import type { ConversationMessage } from '../conversation/conversation.state.js';
import {
  MAX_ENTITIES,
  checkMemory,
  entitiesOf,
  entitiesOfConversation,
  parseJsonPath,
  withKnownEntities,
} from './working-memory.js';

const call = (id: string, name: string, result: unknown): PromptMessage[] => [
  { role: 'assistant', content: '', toolCalls: [{ id, name, args: {} }] },
  { role: 'tool', toolCallId: id, content: JSON.stringify(result) },
];
const memory = {
  get_page: [{ type: 'page', id: '$.id', label: '$.title' }],
  list_pages: [{ type: 'page', id: '$.items[*].id', label: '$.items[*].title' }],
};
const memoryOf = (tool: string) => memory[tool as keyof typeof memory];

const fieldOf = (run: () => unknown): unknown => {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return error.details['field'];
    throw error;
  }
  return undefined;
};

describe('working memory', () => {
  it('finds the entities results name, latest first, one per type and id', () => {
    const messages: PromptMessage[] = [
      { role: 'system', content: 's' },
      ...call('c1', 'get_page', { id: 'p-1', title: 'Home' }),
      ...call('c2', 'list_pages', {
        items: [
          { id: 'p-2', title: 'Pricing' },
          { id: 'p-1', title: 'Home' },
        ],
      }),
      ...call('c3', 'get_page', { id: 'p-3', title: 'About' }),
      ...call('c4', 'other_tool', { id: 'x-1' }),
      { role: 'tool', toolCallId: 'c9', content: 'not json' },
    ];
    expect(entitiesOf(messages, memoryOf)).toEqual([
      { type: 'page', id: 'p-3', label: 'About', toolCallId: 'c3' },
      { type: 'page', id: 'p-1', label: 'Home', toolCallId: 'c2' },
      { type: 'page', id: 'p-2', label: 'Pricing', toolCallId: 'c2' },
    ]);
  });

  it(`keeps at most ${MAX_ENTITIES}`, () => {
    const messages = Array.from({ length: 60 }, (_, i) => call(`c${i}`, 'get_page', { id: `p-${i}` })).flat();
    const entities = entitiesOf(messages, memoryOf);
    expect(entities).toHaveLength(MAX_ENTITIES);
    expect(entities[0]!.id).toBe('p-59');
  });

  it('adds a Known entities section to the system prompt', () => {
    const prompt = withKnownEntities(
      [{ role: 'system', content: 'Base.' }],
      [{ type: 'page', id: 'p-3', label: 'About', toolCallId: 'c3' }],
    );
    expect(prompt[0]!.content).toMatch(/^Base\.\n\n# Known entities\n.*\n- page p-3: About$/);
    expect(withKnownEntities([{ role: 'system', content: 'Base.' }], [])).toEqual([
      { role: 'system', content: 'Base.' },
    ]);
  });

  it("reads the same working memory from a conversation's messages as the log keeps them (GET's entities)", () => {
    const messages: ConversationMessage[] = [
      { id: 'm1', role: 'user', content: 'find home' },
      {
        id: 'm2',
        role: 'assistant',
        content: '',
        toolCalls: [{ toolCallId: 'c1', name: 'get_page', args: {} }],
      },
      { id: 'tool-c1', role: 'tool', toolCallId: 'c1', ok: true, content: '{"id":"p-1","title":"Home"}' },
      {
        id: 'm3',
        role: 'assistant',
        content: '',
        toolCalls: [{ toolCallId: 'c2', name: 'get_page', args: {} }],
      },
      { id: 'tool-c2', role: 'tool', toolCallId: 'c2', ok: true, content: '{"id":"p-2"}' },
    ];
    expect(entitiesOfConversation(messages, memoryOf)).toEqual([
      { type: 'page', id: 'p-2', toolCallId: 'c2' },
      { type: 'page', id: 'p-1', label: 'Home', toolCallId: 'c1' },
    ]);
    expect(entitiesOfConversation(messages, () => undefined)).toEqual([]);
  });

  it('refuses a JSONPath it cannot follow, naming the field', () => {
    expect(parseJsonPath("$.a['b c'][0][*].d", 'f')).toHaveLength(5);
    expect(fieldOf(() => checkMemory([{ type: 'page', id: 'id' }]))).toBe('memory[0].id');
    expect(
      fieldOf(() =>
        checkMemory([
          { type: 'page', id: '$.id' },
          { type: 'page', id: '$.id', label: '$..title' },
        ]),
      ),
    ).toBe('memory[1].label');
    expect(fieldOf(() => checkMemory([{ type: '', id: '$.id' }]))).toBe('memory[0].type');
  });
});
