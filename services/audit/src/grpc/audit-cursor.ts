import { ValidationError } from '@keel/core';

/** The opaque page cursor of the audit trail: base64url of the last entry's sort key. */
export const encodeAuditCursor = (sortKey: string): string =>
  Buffer.from(sortKey, 'utf8').toString('base64url');

/** The sort key in a cursor; a cursor this service did not make is INVALID_ARGUMENT. */
export const decodeAuditCursor = (cursor: string): string => {
  const key = /^[A-Za-z0-9_-]{1,400}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  if (!/^\d{4}-\d{2}-\d{2}T[^|]+\|[^|]+$/.test(key)) {
    throw new ValidationError('cursor is not a cursor of this trail (pass next_cursor as given)', {
      field: 'cursor',
    });
  }
  return key;
};
