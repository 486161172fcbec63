import { ValidationError } from '../errors/index.js';

/** Stream names are `<category>-<id>`: the category says which aggregate, the id which instance. */
export interface StreamNameParts {
  category: string;
  id: string;
}

const CATEGORY = /^[a-z][a-z0-9_]{0,31}$/;
const MAX_ID_LENGTH = 200;
const TENANT = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** Builds a stream name from its category and id. */
export const streamName = (category: string, id: string): string => {
  if (!CATEGORY.test(category))
    throw new ValidationError(`invalid stream category "${category}"`, { field: 'category' });
  if (id.length === 0 || id.length > MAX_ID_LENGTH)
    throw new ValidationError('invalid stream id length', { field: 'id' });
  return `${category}-${id}`;
};

/** Splits a stream name into category and id; throws on a malformed name. */
export const parseStreamName = (name: string): StreamNameParts => {
  const dash = name.indexOf('-');
  if (dash <= 0 || dash === name.length - 1) {
    throw new ValidationError(`stream name "${name}" must be <category>-<id>`, { field: 'streamName' });
  }
  const category = name.slice(0, dash);
  const id = name.slice(dash + 1);
  if (!CATEGORY.test(category) || id.length > MAX_ID_LENGTH) {
    throw new ValidationError(`stream name "${name}" must be <category>-<id>`, { field: 'streamName' });
  }
  return { category, id };
};

/** Validates a tenant id: it travels in NATS subjects and index keys, so its alphabet is closed. */
export const assertTenantId = (tenantId: string): void => {
  if (!TENANT.test(tenantId))
    throw new ValidationError(`invalid tenant id "${tenantId}"`, { field: 'tenantId' });
};
