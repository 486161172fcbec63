// A tool's `approval` (API.md "Tool sources and policies"): "never", "always", or a policy object
// `{ when, message? }`. The proto carries it as text: the word, or the object as JSON. Its shape
// is checked here; the agent judges the policy (naming `approval.when`, `approval.message` …).
import { fail, optionalJsonObject } from './request-fields.js';

/** Largest policy object as JSON text. */
const MAX_POLICY_BYTES = 20 * 1024;

/** The body's `approval` as the proto's text (absent: never). */
export const approvalTextOf = (value: unknown): string => {
  if (value === undefined) return 'never';
  if (value === 'never' || value === 'always') return value;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return fail('approval', 'approval must be "never", "always" or { "when": <JSON Schema>, "message"? }');
  }
  return JSON.stringify(optionalJsonObject(value, 'approval', MAX_POLICY_BYTES));
};

/** The proto's approval text as API.md shows it: the word, or the policy object. */
export const approvalOfText = (text: string): unknown =>
  text.trimStart().startsWith('{') ? (JSON.parse(text) as unknown) : text || 'never';
