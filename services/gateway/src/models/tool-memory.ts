// A tool body's `memory` (API.md working memory), checked for shape here; the agent checks the
// JSONPaths themselves and names the failing one.
import { fail, objectWith, optionalString, requiredString } from '../config/request-fields.js';

/** Most memory declarations a tool may have. */
const MAX_DECLARATIONS = 20;

/** `memory: [{ type, id, label? }]` as PutTool's `memoryJson`; empty when absent. */
export const memoryJsonOf = (value: unknown): string => {
  if (value === undefined) return '';
  if (!Array.isArray(value)) return fail('memory', 'memory must be a list of { type, id, label? }');
  if (value.length > MAX_DECLARATIONS)
    return fail('memory', `memory lists at most ${MAX_DECLARATIONS} entries`);
  const declarations = value.map((item: unknown, i) => {
    const field = `memory[${i}]`;
    const object = objectWith(item, ['type', 'id', 'label'], field);
    const label = optionalString(object.label, `${field}.label`, 200);
    return {
      type: requiredString(object.type, `${field}.type`, 64),
      id: requiredString(object.id, `${field}.id`, 200),
      ...(label === undefined ? {} : { label }),
    };
  });
  return declarations.length === 0 ? '' : JSON.stringify(declarations);
};
