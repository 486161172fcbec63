export type {
  JsonSchema,
  ToolCallKey,
  ToolDefinition,
  ToolError,
  ToolErrorCode,
  ToolOutcome,
} from './types.js';
export {
  ArgsValidator,
  MAX_TOOL_SCHEMA_BYTES,
  assertToolSchema,
  defaultArgsValidator,
  formatArgsProblems,
  schemaHash,
} from '@keel/tooling';
export type { ArgsProblem, ArgsValidation, ArgsValidatorOptions } from '@keel/tooling';
export { backoffDelayMs, sleep } from './backoff.js';
export type { BackoffPolicy } from './backoff.js';
export {
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_USER_AGENT,
  ToolCallCancelledError,
  WebhookExecutor,
  signBody,
  verifySignature,
} from './webhook-executor.js';
export type {
  WebhookAttemptInfo,
  WebhookExecutorOptions,
  WebhookRequest,
  WebhookResult,
} from './webhook-executor.js';
export { InMemoryToolCallLedger, MAX_TOOL_CALL_ID_LENGTH, assertLedgerKey, ledgerId } from './ledger.js';
export type { BeginResult, ToolCallAttemptMeta, ToolCallLedger, ToolCallRecord } from './ledger.js';
export { MongoToolCallLedger } from './mongo-ledger.js';
export type { ToolCallDocument, ToolOutcomeDocument } from './mongo-ledger.js';
export { executeToolCall } from './execute-tool-call.js';
export type {
  ToolCallDependencies,
  ToolCallOptions,
  ToolCallRequest,
  ToolCallResult,
} from './execute-tool-call.js';
