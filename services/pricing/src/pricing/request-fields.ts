import { ValidationError } from '@keel/core';
import { MAX_CONTEXT_WINDOW_TOKENS, MAX_USD_PER_MTOK } from '../catalogue/price.js';

/** RFC 3339: a date, a time, and an offset (`Z` or `±hh:mm`); fractions of seconds allowed. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/;

/** An instant field: empty means `now`; anything else must be RFC 3339 with an offset. */
export const instantOf = (field: string, value: string | undefined, now: number): number => {
  const raw = value?.trim() ?? '';
  if (raw === '') return now;
  const ms = RFC3339.test(raw) ? Date.parse(raw.replace(' ', 'T')) : Number.NaN;
  if (!Number.isFinite(ms)) {
    throw new ValidationError(
      `${field} must be an RFC 3339 instant with an offset, e.g. 2025-01-31T12:00:00Z`,
      {
        field,
      },
    );
  }
  return ms;
};

/** A token count: a whole number, 0 or more. */
export const tokensOf = (field: string, value: number | undefined): number => {
  const tokens = value ?? 0;
  if (!Number.isSafeInteger(tokens) || tokens < 0) {
    throw new ValidationError(`${field} must be a whole number of tokens, 0 or more`, { field });
  }
  return tokens;
};

/** A price per million tokens: finite, 0 or more, below the typo guard. */
export const usdPerMtokOf = (field: string, value: number): number => {
  if (!Number.isFinite(value) || value < 0 || value > MAX_USD_PER_MTOK) {
    throw new ValidationError(
      `${field} must be a price from 0 to ${MAX_USD_PER_MTOK} USD per million tokens`,
      {
        field,
      },
    );
  }
  return value;
};

/** A context window: a whole number of tokens, 0 for "keep the catalogue's". */
export const windowOf = (field: string, value: number | undefined): number => {
  const tokens = value ?? 0;
  if (!Number.isSafeInteger(tokens) || tokens < 0 || tokens > MAX_CONTEXT_WINDOW_TOKENS) {
    throw new ValidationError(
      `${field} must be a whole number of tokens from 0 to ${MAX_CONTEXT_WINDOW_TOKENS}`,
      {
        field,
      },
    );
  }
  return tokens;
};

/** A required, non-blank model id. */
export const modelIdOf = (field: string, value: string | undefined): string => {
  const model = value?.trim() ?? '';
  if (model === '') throw new ValidationError(`${field} is required`, { field });
  if (model.length > 200) throw new ValidationError(`${field} must be at most 200 characters`, { field });
  return model;
};
