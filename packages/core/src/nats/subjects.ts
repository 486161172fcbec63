import { ValidationError } from '../errors/index.js';
import type { ConsumerFilter } from '../bus/event-bus.js';
import { checkFilter } from '../bus/consumer-settings.js';
import type { RecordedEvent } from '../typing/index.js';
import { assertTenantId, parseStreamName } from '../typing/index.js';

/** The default first tokens of every event subject. */
export const DEFAULT_SUBJECT_PREFIX = 'keel.events';

const PLAIN_ID = /^[A-Za-z0-9-][A-Za-z0-9_-]*$/;
const PREFIX = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
const ENCODED_MARK = '_';

/**
 * A stream id as one subject token: as is when it is made of `[A-Za-z0-9_-]` and does not start
 * with `_`; else `_` + base64url of its UTF-8 bytes. Plain tokens never start with `_`, so an
 * encoded id never equals a plain one.
 */
export const encodeSubjectToken = (id: string): string =>
  PLAIN_ID.test(id) ? id : `${ENCODED_MARK}${Buffer.from(id, 'utf8').toString('base64url')}`;

/** The inverse of `encodeSubjectToken`. */
export const decodeSubjectToken = (token: string): string =>
  token.startsWith(ENCODED_MARK) ? Buffer.from(token.slice(1), 'base64url').toString('utf8') : token;

/** Checks a subject prefix: dot-separated tokens of `[A-Za-z0-9_-]`, no wildcards. */
export const checkSubjectPrefix = (prefix: string): string => {
  if (!PREFIX.test(prefix)) {
    throw new ValidationError(`subject prefix "${prefix}" must be dot-separated tokens of [A-Za-z0-9_-]`, {
      field: 'subjectPrefix',
    });
  }
  return prefix;
};

/** The subject an event is published on: `<prefix>.<tenantId>.<category>.<encoded stream id>`. */
export const eventSubject = (
  prefix: string,
  event: Pick<RecordedEvent, 'tenantId' | 'streamName'>,
): string => {
  assertTenantId(event.tenantId);
  const { category, id } = parseStreamName(event.streamName);
  return `${prefix}.${event.tenantId}.${category}.${encodeSubjectToken(id)}`;
};

/** The subject filter of a consumer or subscriber scoped to a tenant and/or a category. */
export const filterSubject = (prefix: string, filter: ConsumerFilter = {}): string => {
  const { tenantId, category } = checkFilter(filter);
  if (tenantId === undefined && category === undefined) return `${prefix}.>`;
  return `${prefix}.${tenantId ?? '*'}.${category ?? '*'}.*`;
};
