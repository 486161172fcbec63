import { ValidationError } from '@keel/core';
import type { MemoryDeclaration } from '@keel/events';
import type { ConversationMessage } from '../conversation/conversation.state.js';
import type { PromptMessage } from '../prompt/prompt.js';
import { KNOWN_ENTITIES_SECTION } from '../prompt/prompt.js';

/** Most entities a conversation keeps (API.md). */
export const MAX_ENTITIES = 50;

/** One step of a JSONPath: a member name, an index, or every element (`[*]`). */
type PathStep = { key: string } | { index: number } | { all: true };

/** An entity named by a tool result. */
export interface Entity {
  type: string;
  id: string;
  label?: string;
  /** The tool call whose result named it. */
  toolCallId: string;
}

const STEP = /^(?:\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\[\*\]|\['([^']+)'\]|\["([^"]+)"\])/;

/** The steps of a JSONPath of the supported subset (`$`, `.name`, `['name']`, `[0]`, `[*]`); throws naming `field`. */
export const parseJsonPath = (path: string, field: string): PathStep[] => {
  if (!path.startsWith('$'))
    throw new ValidationError(`${field} must be a JSONPath starting with $`, { field });
  const steps: PathStep[] = [];
  let rest = path.slice(1);
  while (rest !== '') {
    const match = STEP.exec(rest);
    if (!match) {
      throw new ValidationError(
        `${field}: "${path}" is not a supported JSONPath ($.name, ['name'], [0], [*])`,
        {
          field,
        },
      );
    }
    const [whole, name, index, single, double] = match;
    if (index !== undefined) steps.push({ index: Number(index) });
    else if (whole === '[*]') steps.push({ all: true });
    else steps.push({ key: (name ?? single ?? double)! });
    rest = rest.slice(whole.length);
  }
  return steps;
};

/** The values `steps` reach in `value`. */
const evaluate = (steps: readonly PathStep[], value: unknown): unknown[] => {
  let current: unknown[] = [value];
  for (const step of steps) {
    current = current.flatMap((item): unknown[] => {
      if ('all' in step) return Array.isArray(item) ? item : [];
      if ('index' in step) return Array.isArray(item) && step.index < item.length ? [item[step.index]] : [];
      return typeof item === 'object' &&
        item !== null &&
        !Array.isArray(item) &&
        Object.hasOwn(item, step.key)
        ? [(item as Record<string, unknown>)[step.key]]
        : [];
    });
  }
  return current;
};

/** Checks a tool's memory declarations, naming the failing field (`memory[0].id`). */
export const checkMemory = (memory: readonly MemoryDeclaration[]): void => {
  memory.forEach((declaration, i) => {
    if (typeof declaration.type !== 'string' || declaration.type.trim() === '') {
      throw new ValidationError(`memory[${i}].type is required`, { field: `memory[${i}].type` });
    }
    parseJsonPath(String(declaration.id ?? ''), `memory[${i}].id`);
    if (declaration.label !== undefined) parseJsonPath(declaration.label, `memory[${i}].label`);
  });
};

const scalar = (value: unknown): string | undefined =>
  typeof value === 'string' || typeof value === 'number' ? String(value) : undefined;

/** The entities one result names under one declaration (ids and labels paired by position). */
const entitiesIn = (result: unknown, declaration: MemoryDeclaration, toolCallId: string): Entity[] => {
  const ids = evaluate(parseJsonPath(declaration.id, 'memory.id'), result).map(scalar);
  const labels = declaration.label
    ? evaluate(parseJsonPath(declaration.label, 'memory.label'), result).map(scalar)
    : [];
  return ids.flatMap((id, i) => {
    if (id === undefined) return [];
    const label = labels.length === ids.length ? labels[i] : labels.length === 1 ? labels[0] : undefined;
    return [{ type: declaration.type, id, ...(label === undefined ? {} : { label }), toolCallId }];
  });
};

const parsed = (content: string): unknown => {
  try {
    return JSON.parse(content) as unknown;
  } catch {
    return undefined;
  }
};

/**
 * The conversation's working memory: the entities its tool results name under their tools'
 * memory declarations, latest first, one per type and id (the latest mention wins), at most
 * MAX_ENTITIES. Read from the prompt's messages before any context policy stubs them.
 */
export const entitiesOf = (
  messages: readonly PromptMessage[],
  memoryOf: (tool: string) => readonly MemoryDeclaration[] | undefined,
): Entity[] => {
  const names = new Map<string, string>();
  const found: Entity[] = [];
  for (const message of messages) {
    if (message.role === 'assistant')
      for (const call of message.toolCalls ?? []) names.set(call.id, call.name);
    if (message.role !== 'tool') continue;
    const declarations = memoryOf(names.get(message.toolCallId) ?? '') ?? [];
    if (declarations.length === 0) continue;
    const result = parsed(message.content);
    if (result === undefined) continue;
    for (const declaration of declarations)
      found.push(...entitiesIn(result, declaration, message.toolCallId));
  }
  const seen = new Set<string>();
  const latestFirst: Entity[] = [];
  for (const entity of found.reverse()) {
    const key = `${entity.type}\u0000${entity.id}`;
    if (seen.has(key)) continue;
    seen.add(key);
    latestFirst.push(entity);
  }
  return latestFirst.slice(0, MAX_ENTITIES);
};

/** The working memory of a conversation's messages as its log keeps them, results in full (GET's `entities`). */
export const entitiesOfConversation = (
  messages: readonly ConversationMessage[],
  memoryOf: (tool: string) => readonly MemoryDeclaration[] | undefined,
): Entity[] => {
  const prompt = messages.map((m): PromptMessage => {
    if (m.role === 'tool') return { role: 'tool', toolCallId: m.toolCallId ?? '', content: m.content };
    if (m.role === 'user') return { role: 'user', content: m.content };
    const toolCalls = (m.toolCalls ?? []).map((c) => ({ id: c.toolCallId, name: c.name, args: c.args }));
    return { role: 'assistant', content: m.content, toolCalls };
  });
  return entitiesOf(prompt, memoryOf);
};

/** The prompt with a "Known entities" section at the end of its system prompt; unchanged when there are none. */
export const withKnownEntities = (
  messages: PromptMessage[],
  entities: readonly Entity[],
): PromptMessage[] => {
  if (entities.length === 0 || messages[0]?.role !== 'system') return messages;
  const lines = entities.map((e) => `- ${e.type} ${e.id}${e.label === undefined ? '' : `: ${e.label}`}`);
  const section = `${KNOWN_ENTITIES_SECTION}Entities named earlier in this conversation, latest first ("that ${entities[0]!.type}" is the first of its type):\n${lines.join('\n')}`;
  return [{ role: 'system', content: `${messages[0].content}${section}` }, ...messages.slice(1)];
};
