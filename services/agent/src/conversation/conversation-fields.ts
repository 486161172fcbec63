import { ValidationError } from '@keel/core';

/*
 * The limits of a conversation's title and metadata (API `POST` and `PATCH
 * /v1/conversations`), checked by the gateway for HTTP and again by the decider for every caller.
 */

/** Longest title (characters). */
export const MAX_TITLE_CHARS = 200;
/** Most metadata keys. */
export const MAX_METADATA_KEYS = 64;
/** Longest metadata value (characters). */
export const MAX_METADATA_VALUE_CHARS = 512;
/** A metadata key: safe as a query parameter (`metadata.<key>=`) and as a document path. */
export const METADATA_KEY = /^[A-Za-z0-9_-]{1,64}$/;

/** A title: 1 to MAX_TITLE_CHARS characters, not only spaces; else refused naming `title`. */
export const checkTitle = (title: string): void => {
  if (title.trim() === '' || title.length > MAX_TITLE_CHARS) {
    throw new ValidationError(`title must be 1 to ${MAX_TITLE_CHARS} characters`, { field: 'title' });
  }
};

/** Metadata: at most 64 keys matching METADATA_KEY, string values of at most 512 characters. */
export const checkMetadata = (metadata: Record<string, unknown>): void => {
  const entries = Object.entries(metadata);
  if (entries.length > MAX_METADATA_KEYS) {
    throw new ValidationError(`metadata must have at most ${MAX_METADATA_KEYS} keys`, { field: 'metadata' });
  }
  for (const [key, value] of entries) {
    if (!METADATA_KEY.test(key)) {
      throw new ValidationError('metadata keys must match ^[A-Za-z0-9_-]{1,64}$', { field: 'metadata' });
    }
    if (typeof value !== 'string' || value.length > MAX_METADATA_VALUE_CHARS) {
      throw new ValidationError(
        `metadata.${key} must be a string of at most ${MAX_METADATA_VALUE_CHARS} characters`,
        {
          field: `metadata.${key}`,
        },
      );
    }
  }
};
