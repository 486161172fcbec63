// Which key seals which stream (crypto-shredding, API.md DELETE): conversations and team runs their
// own, a tool call's execution stream its conversation's; nothing else is sealed.
import { describe, expect, it } from 'vitest';
import { conversationKeyStream } from './erasure.js';

describe('conversationKeyStream', () => {
  it('seals conversations and runs with their own key, tool calls with their conversation’s, nothing else', () => {
    const of = (streamName: string, data: unknown = {}) => conversationKeyStream({ streamName, data });
    expect(of('conversation-c1')).toBe('conversation-c1');
    expect(of('run-r1', { taskId: 't1', output: 'text' })).toBe('run-r1');
    expect(of('toolcall-x1', { conversationId: 'c1' })).toBe('conversation-c1');
    expect(of('toolcall-x1', {})).toBeUndefined();
    expect(of('runindex-acme', { runId: 'r1' })).toBeUndefined();
    expect(of('tenantconfig-acme')).toBeUndefined();
  });
});
