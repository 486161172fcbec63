// A message's per-message context and end user (API.md "The client in the loop"), as SubmitMessage
// receives them: checked here, at the agent's edge, so the decider records only what is valid.
import { ValidationError } from '@keel/core';
import type { EndUser } from '@keel/events';
import { isEndUserRole } from '@keel/events';
import type { ArgsValidator } from '@keel/tooling';
import { defaultArgsValidator } from '@keel/tooling';

/** Largest per-message context as JSON text: 32 KiB. */
export const MAX_CONTEXT_BYTES = 32 * 1024;

/** The context of `contextJson` (a JSON object of at most 32 KiB), or undefined when empty. */
export const contextOf = (contextJson: string): Record<string, unknown> | undefined => {
  if (contextJson === '') return undefined;
  if (Buffer.byteLength(contextJson) > MAX_CONTEXT_BYTES) {
    throw new ValidationError(`context must be at most ${MAX_CONTEXT_BYTES} bytes as JSON`, {
      field: 'context',
    });
  }
  let value: unknown;
  try {
    value = JSON.parse(contextJson);
  } catch {
    throw new ValidationError('context must be a JSON object', { field: 'context' });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ValidationError('context must be a JSON object', { field: 'context' });
  }
  return value as Record<string, unknown>;
};

/**
 * Refuses a context that fails the agent's `contextSchema`, naming the field (`context.page`);
 * an agent without one takes any context.
 */
export const checkContext = (
  context: Record<string, unknown> | undefined,
  schema: Record<string, unknown> | undefined,
  validator: ArgsValidator = defaultArgsValidator,
): void => {
  if (context === undefined || schema === undefined) return;
  const verdict = validator.validate(schema, context);
  if (verdict.ok) return;
  const [first] = verdict.errors;
  const path = (first?.path ?? '$').replace(/^\$/, 'context');
  const problems = verdict.errors
    .slice(0, 5)
    .map((e) => `${e.path.replace(/^\$/, 'context')}: ${e.message}`)
    .join('; ');
  throw new ValidationError(`context does not match the agent's contextSchema: ${problems}`, {
    field: path,
  });
};

/** The turn's end user: the acting user id and the `X-Keel-User-Role` word, when one was sent. */
export const endUserOf = (userId: string, role: string): EndUser => {
  if (role !== '' && !isEndUserRole(role)) {
    throw new ValidationError('X-Keel-User-Role must be one word of 1 to 64 letters, digits, _ or -', {
      field: 'X-Keel-User-Role',
    });
  }
  return { id: userId, ...(role ? { role } : {}) };
};
