// A tool's (or an MCP server's) `affects` (API.md "Affected resources"): the resources its
// successful calls change, reported by turn.completed as `affected`.
import { ValidationError } from '@keel/core';

/** Most names one `affects` may list, and the form of one (`pages`, `schema`, `cms.pages`). */
const MAX_AFFECTS = 20;
const AFFECTED_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;

/** Refuses an `affects` that is not at most 20 short resource names, naming the field. */
export const checkAffects = (affects: unknown): void => {
  if (affects === undefined) return;
  if (
    !Array.isArray(affects) ||
    affects.length > MAX_AFFECTS ||
    affects.some((a) => typeof a !== 'string' || !AFFECTED_NAME.test(a))
  ) {
    throw new ValidationError(
      `affects must be at most ${MAX_AFFECTS} names (letters, digits, _ . : -; up to 64 characters)`,
      { field: 'affects' },
    );
  }
};
