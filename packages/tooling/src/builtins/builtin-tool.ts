import { ValidationError } from '@keel/core';
import type { JsonSchema } from '../json-schema.js';

/** What a built-in tool knows about the call it serves. */
export interface BuiltinContext {
  tenantId: string;
  conversationId: string;
  toolCallId: string;
  /** The clock (tests pin it). */
  now: () => Date;
  signal?: AbortSignal;
}

/** A tool that runs inside the tools service; its name is reserved for all tenants. */
export interface BuiltinTool {
  name: string;
  description: string;
  /** The JSON Schema of its arguments (`type: 'object'`), checked before `execute` runs. */
  inputSchema: JsonSchema;
  /** Computes the result (any JSON); throws BuiltinToolError for input it cannot serve. */
  execute(args: Record<string, unknown>, ctx: BuiltinContext): unknown;
}

/**
 * Input a built-in tool cannot serve. `reason` becomes the tool error's code the model reads
 * (`unknown_timezone`, `division_by_zero`, …); the message says what to change.
 */
export class BuiltinToolError extends ValidationError {
  constructor(
    readonly reason: string,
    message: string,
    options?: { field?: string; details?: Record<string, unknown> },
  ) {
    super(message, { field: options?.field, details: { ...options?.details, reason } });
  }
}
