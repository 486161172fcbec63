import type { JsonSchema } from './json-schema.js';

/*
 * Approval policies (API.md "Tool sources and policies"): `never`, `always`, or `{ when }`: a JSON
 * Schema the arguments must match for the call to need a person's approval, with an optional
 * `message` template (`Delete page {{args.id}}?`). Pure: the schema check comes in as a function,
 * so the agent (which asks) and the tools service (which refuses an unapproved call) decide alike.
 */

/** An argument-dependent approval. */
export interface ApprovalWhen {
  when: JsonSchema;
  /** Shown with `approval.required`; `{{args.<path>}}` is filled from the call's arguments. */
  message?: string;
  /** End-user roles (`X-Keel-User-Role`) whose turns never need the approval. */
  exceptUserRoles?: string[];
}

/** A tool's approval policy. */
export type ApprovalPolicy = 'never' | 'always' | ApprovalWhen;

/** What a policy says of one call. */
export interface ApprovalVerdict {
  /** A person must approve the call before it runs. */
  required: boolean;
  /** True when a `when` was evaluated (and so decided, either way). */
  byPolicy: boolean;
  /** The filled message, when the call needs approval and the policy has one. */
  message?: string;
}

/** Whether `args` match `schema` (the caller's JSON Schema validator). */
export type SchemaMatch = (schema: JsonSchema, args: unknown) => boolean;

/** Longest message template, and longest filled value of one variable. */
export const MAX_APPROVAL_MESSAGE = 500;
const MAX_VALUE_CHARS = 200;
const VARIABLE = /\{\{\s*args((?:\.[a-zA-Z0-9_-]+)*)\s*\}\}/g;
const ANY_VARIABLE = /\{\{([^}]*)\}\}/g;

/** The value at `path` (`.a.b`) of the arguments, as text; empty when absent. */
const valueAt = (args: unknown, path: string): string => {
  let value: unknown = args;
  for (const key of path.split('.').filter((k) => k !== '')) {
    value =
      typeof value === 'object' && value !== null && Object.hasOwn(value, key)
        ? (value as Record<string, unknown>)[key]
        : undefined;
  }
  if (value === undefined) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > MAX_VALUE_CHARS ? `${text.slice(0, MAX_VALUE_CHARS)}…` : text;
};

/** `template` with each `{{args.<path>}}` replaced by that argument's value. */
export const fillApprovalMessage = (template: string, args: unknown): string =>
  template.replace(VARIABLE, (_match, path: string) => valueAt(args, path));

/**
 * What `policy` says of a call with `args` in a turn of the end-user role `userRole`. A `when`
 * whose check throws (a schema the validator cannot compile) asks for approval: a policy that
 * cannot be read never lets a call through. A role the policy excepts needs no approval: the
 * policy decided (`byPolicy`) without evaluating its `when`.
 */
export const approvalFor = (
  policy: ApprovalPolicy,
  args: unknown,
  matches: SchemaMatch,
  userRole?: string,
): ApprovalVerdict => {
  if (policy === 'never') return { required: false, byPolicy: false };
  if (policy === 'always') return { required: true, byPolicy: false };
  if (userRole !== undefined && policy.exceptUserRoles?.includes(userRole)) {
    return { required: false, byPolicy: true };
  }
  let required: boolean;
  try {
    required = matches(policy.when, args);
  } catch {
    required = true;
  }
  if (!required) return { required: false, byPolicy: true };
  return {
    required: true,
    byPolicy: true,
    ...(policy.message === undefined ? {} : { message: fillApprovalMessage(policy.message, args) }),
  };
};

/** Whether `value` lists at most 20 end-user role words (`X-Keel-User-Role`). */
const isRoleList = (value: unknown): boolean =>
  Array.isArray(value) &&
  value.length <= 20 &&
  value.every((role) => typeof role === 'string' && /^[A-Za-z0-9_-]{1,64}$/.test(role));

/** Why `value` is not an approval policy (naming the field under `field`), or undefined when it is one. */
export const approvalPolicyProblem = (
  value: unknown,
  field = 'approval',
): { field: string; message: string } | undefined => {
  if (value === 'never' || value === 'always') return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return {
      field,
      message: `${field} must be "never", "always" or { "when": <JSON Schema>, "message"?, "exceptUserRoles"? }`,
    };
  }
  const policy = value as Record<string, unknown>;
  const unknown = Object.keys(policy).find((k) => k !== 'when' && k !== 'message' && k !== 'exceptUserRoles');
  if (unknown !== undefined)
    return { field: `${field}.${unknown}`, message: `${field}.${unknown}: unknown field` };
  const except = policy.exceptUserRoles;
  if (except !== undefined && !isRoleList(except)) {
    return {
      field: `${field}.exceptUserRoles`,
      message: `${field}.exceptUserRoles must be a list of at most 20 end-user roles (1 to 64 letters, digits, _ or -)`,
    };
  }
  const when = policy.when;
  if (typeof when !== 'object' || when === null || Array.isArray(when)) {
    return { field: `${field}.when`, message: `${field}.when must be a JSON Schema object` };
  }
  if (JSON.stringify(when).length > 16 * 1024) {
    return { field: `${field}.when`, message: `${field}.when must be at most 16384 bytes as JSON` };
  }
  const message = policy.message;
  if (message === undefined) return undefined;
  if (typeof message !== 'string' || message.length === 0 || message.length > MAX_APPROVAL_MESSAGE) {
    return {
      field: `${field}.message`,
      message: `${field}.message must be 1 to ${MAX_APPROVAL_MESSAGE} characters`,
    };
  }
  for (const [, inner] of message.matchAll(ANY_VARIABLE)) {
    if (!/^\s*args(\.[a-zA-Z0-9_-]+)*\s*$/.test(inner ?? '')) {
      return {
        field: `${field}.message`,
        message: `${field}.message: unknown variable {{${inner}}} (only {{args.<path>}})`,
      };
    }
  }
  return undefined;
};
