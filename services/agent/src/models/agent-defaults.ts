import { ValidationError } from '@keel/core';
import type { AgentDefinition, DefaultedField, TenantDefaults } from '@keel/events';
import { DEFAULTED_FIELDS } from '@keel/events';

/**
 * The agent as a turn starting now runs it, and as reads show it: each field its PUT left out
 * (`fromDefaults`) is the tenant's default as it is now, else the value stored when the agent was
 * written (the default then, or the platform's). Its own fields win; defaults are never copied
 * into them, so an agent follows a default changed after it was written.
 */
export const withDefaults = (agent: AgentDefinition, defaults: TenantDefaults): AgentDefinition => {
  const inherited = (field: DefaultedField): boolean =>
    agent.fromDefaults?.includes(field) === true && defaults[field] !== undefined;
  return {
    ...agent,
    ...(inherited('model') ? { model: defaults.model! } : {}),
    ...(inherited('temperature') ? { temperature: defaults.temperature! } : {}),
    ...(inherited('maxSteps') ? { maxSteps: defaults.maxSteps! } : {}),
  };
};

/** The defaulted fields PutAgent names (`from_defaults`), each once, in a fixed order; another name is refused. */
export const defaultedFieldsOf = (names: readonly string[]): { fromDefaults?: DefaultedField[] } => {
  names.forEach((name, index) => {
    if (!(DEFAULTED_FIELDS as readonly string[]).includes(name)) {
      throw new ValidationError(
        `agent.fromDefaults[${index}] must be one of ${DEFAULTED_FIELDS.join(', ')}`,
        {
          field: `agent.fromDefaults[${index}]`,
        },
      );
    }
  });
  const fields = DEFAULTED_FIELDS.filter((field) => names.includes(field));
  return fields.length > 0 ? { fromDefaults: fields } : {};
};
