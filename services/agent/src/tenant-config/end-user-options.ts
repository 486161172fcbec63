// What an agent declares for the client in the loop (API.md "Per-message context", "Instructions
// as templates"): its instructions' variables, the zone `{{now}}` is shown in, and the JSON Schema
// a message's context must match. Checked when the agent is stored, so a turn never meets an
// unknown variable, an unknown zone or a schema that does not compile.
import { ValidationError } from '@keel/core';
import type { AgentDefinition } from '@keel/events';
import { defaultArgsValidator } from '@keel/tooling';
import { isKnownTimeZone, unknownTemplateVariable } from '../prompt/instruction-template.js';

/** Refuses unknown template variables, an unknown `timeZone` and a `contextSchema` that does not compile. */
export const checkEndUserOptions = (agent: AgentDefinition): void => {
  const unknown = unknownTemplateVariable(agent.instructions);
  if (unknown !== undefined) {
    throw new ValidationError(
      `instructions: unknown variable ${unknown.slice(0, 80)} (use {{metadata.<key>}}, {{user.id}}, {{user.role}} or {{now}})`,
      { field: 'instructions' },
    );
  }
  const { timeZone, contextSchema } = agent.options ?? {};
  if (timeZone !== undefined && (typeof timeZone !== 'string' || !isKnownTimeZone(timeZone))) {
    throw new ValidationError('timeZone must be an IANA time zone (Europe/Paris)', { field: 'timeZone' });
  }
  if (contextSchema === undefined) return;
  if (typeof contextSchema !== 'object' || contextSchema === null || Array.isArray(contextSchema)) {
    throw new ValidationError('contextSchema must be a JSON Schema object', { field: 'contextSchema' });
  }
  try {
    defaultArgsValidator.compile(contextSchema);
  } catch (error) {
    const reason = error instanceof Error ? error.message.replace(/^inputSchema /, '') : String(error);
    throw new ValidationError(`contextSchema ${reason}`, { field: 'contextSchema' });
  }
};
