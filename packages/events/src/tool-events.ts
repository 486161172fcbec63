import type { EventData } from '@keel/core';
import type { EventError } from './conversation-events.js';

/** Category of the tool execution streams: `toolcall-<toolCallId>`, one outcome each. */
export const TOOL_CALL_CATEGORY = 'toolcall';

/**
 * The tools service executed a tool call (once: its ledger and the stream's `no_stream`
 * expectation make the outcome unique). The agent records it in the conversation.
 */
export type ToolCallExecuted = EventData<
  'ToolCallExecuted',
  {
    toolCallId: string;
    conversationId: string;
    turnId: string;
    name: string;
    ok: boolean;
    result?: unknown;
    error?: EventError;
    attempts: number;
    durationMs: number;
    at: string;
  }
>;
