import type { Decider } from '@keel/core';
import { ValidationError } from '@keel/core';
import type { TenantDefaults, TenantDefaultsEvent } from '@keel/events';
import { parseModelId } from '../model/chat-models.js';

/** The one command of a tenant's defaults: set the fields given, keep the others. */
export interface PutDefaults {
  type: 'PutDefaults';
  defaults: TenantDefaults;
  at: string;
}

/** Ranges of the defaults, as an agent's own fields have them (API.md). */
export const DEFAULT_RANGES = { temperature: { min: 0, max: 2 }, maxSteps: { min: 1, max: 100 } } as const;

const checkDefaults = ({ model, temperature, maxSteps }: TenantDefaults): void => {
  if (model !== undefined) parseModelId(model);
  const t = DEFAULT_RANGES.temperature;
  if (
    temperature !== undefined &&
    !(Number.isFinite(temperature) && temperature >= t.min && temperature <= t.max)
  ) {
    throw new ValidationError(`temperature must be a number from ${t.min} to ${t.max}`, {
      field: 'temperature',
    });
  }
  const s = DEFAULT_RANGES.maxSteps;
  if (maxSteps !== undefined && !(Number.isInteger(maxSteps) && maxSteps >= s.min && maxSteps <= s.max)) {
    throw new ValidationError(`maxSteps must be an integer from ${s.min} to ${s.max}`, { field: 'maxSteps' });
  }
};

/** Only the fields that are set (an undefined one is not written into the event). */
const setFields = (defaults: TenantDefaults): TenantDefaults =>
  Object.fromEntries(Object.entries(defaults).filter(([, value]) => value !== undefined)) as TenantDefaults;

/**
 * A tenant's defaults (`PUT /v1/defaults`): checked like an agent's own fields, naming the
 * field; setting what is already set records nothing.
 */
export const defaultsDecider: Decider<TenantDefaults, PutDefaults, TenantDefaultsEvent> = {
  initialState: () => ({}),
  decide: (command, state) => {
    const defaults = setFields(command.defaults);
    checkDefaults(defaults);
    const changed = Object.entries(defaults).some(
      ([field, value]) => state[field as keyof TenantDefaults] !== value,
    );
    return changed ? [{ type: 'DefaultsConfigured', data: { defaults, at: command.at } }] : [];
  },
  evolve: (state, event) => ({ ...state, ...event.data.defaults }),
};
