import { ValidationError } from '@keel/core';
import { describe, expect, it } from 'vitest';
import {
  parseCreateConversation,
  parseDecideApproval,
  parseListConversations,
  parseSendMessage,
} from './conversation-requests.js';
import {
  Conversation,
  ConversationStatus,
  ListConversationsResponse,
  MessageRole,
} from '@keel/proto/keel/conversations/v1/conversations';
import { conversationListView, conversationView } from './conversation-views.js';

describe('conversation bodies and views', () => {
  it('maps the proto conversation to the API shape: lowercase words, args as JSON', () => {
    const view = conversationView(
      Conversation.fromPartial({
        id: 'c1',
        agentId: 'support',
        status: ConversationStatus.AWAITING_APPROVAL,
        version: 7,
        createdAt: '2026-01-01T00:00:00.000Z',
        messages: [
          { id: 'm1', role: MessageRole.USER, content: 'refund B-2', toolCalls: [] },
          {
            id: 'm2',
            role: MessageRole.ASSISTANT,
            content: '',
            toolCalls: [{ id: 'tc1', name: 'refund', argsJson: '{"id":"B-2"}' }],
          },
        ],
        pendingApprovals: [
          { approvalId: 'a1', toolCallId: 'tc1', tool: 'refund', argsJson: '{"id":"B-2"}', requestedAt: 't' },
        ],
        usage: { promptTokens: 10, completionTokens: 2, costUsd: 0 },
        contextTokens: 10,
        entities: [
          { type: 'page', id: 'p-1', label: 'Home' },
          { type: 'page', id: 'p-2' },
        ],
      }),
    );
    expect(view).toEqual({
      id: 'c1',
      agentId: 'support',
      status: 'awaiting_approval',
      version: 7,
      createdAt: '2026-01-01T00:00:00.000Z',
      messages: [
        { id: 'm1', role: 'user', content: 'refund B-2' },
        {
          id: 'm2',
          role: 'assistant',
          content: '',
          toolCalls: [{ id: 'tc1', name: 'refund', args: { id: 'B-2' } }],
        },
      ],
      pendingApprovals: [
        { approvalId: 'a1', toolCallId: 'tc1', tool: 'refund', args: { id: 'B-2' }, requestedAt: 't' },
      ],
      pendingClientCalls: [],
      usage: { promptTokens: 10, completionTokens: 2, costUsd: 0 },
      contextTokens: 10,
      entities: [
        { type: 'page', id: 'p-1', label: 'Home' },
        { type: 'page', id: 'p-2' },
      ],
    });
  });

  it('shows the title and metadata given at creation, and leaves out empty ones', () => {
    const base = {
      id: 'c1',
      agentId: 'support',
      status: ConversationStatus.IDLE,
      version: 1,
      createdAt: '2026-01-01T00:00:00.000Z',
    };
    expect(
      conversationView(Conversation.fromPartial({ ...base, title: 'Refund', metadata: { ticket: 'T-1' } })),
    ).toMatchObject({
      title: 'Refund',
      metadata: { ticket: 'T-1' },
    });
    const bare = conversationView(Conversation.fromPartial({ ...base, title: '', metadata: {} }));
    expect(bare).not.toHaveProperty('title');
    expect(bare).not.toHaveProperty('metadata');
  });

  it('maps the bodies to the proto enums and refuses bad ones naming the field', () => {
    expect(parseSendMessage({ content: 'hi', ifBusy: 'enqueue' })).toEqual({
      content: 'hi',
      ifBusy: 'IF_BUSY_ENQUEUE',
    });
    expect(parseDecideApproval({ decision: 'deny', reason: 'no' })).toEqual({
      decision: 'DECISION_DENY',
      reason: 'no',
    });
    expect(parseCreateConversation({ agentId: 'a', metadata: { k: 'v' } })).toEqual({
      agentId: 'a',
      title: '',
      metadata: { k: 'v' },
    });
    expect(() => parseSendMessage({ content: '' })).toThrow(/^content /);
    expect(() => parseSendMessage({ content: 'x', ifBusy: 'later' })).toThrow(/^ifBusy /);
    expect(() => parseDecideApproval({ decision: 'maybe' })).toThrow(ValidationError);
    expect(() => parseCreateConversation({ agentId: 'a', metadata: { n: 1 } })).toThrow(/^metadata\.n /);
    expect(() => parseCreateConversation({ agent: 'a' })).toThrow(/^agent: unknown field/);
  });

  it('maps a page of the list: lowercase status, no empty title, nextCursor null on the last page', () => {
    const item = {
      id: 'c2',
      agentId: 'support',
      title: '',
      status: ConversationStatus.RUNNING,
      createdAt: '2026-01-01T00:00:00.000Z',
    };
    expect(
      conversationListView(
        ListConversationsResponse.fromPartial({ data: [{ ...item, title: 'Refund' }], nextCursor: 'abc' }),
      ),
    ).toEqual({
      data: [{ id: 'c2', agentId: 'support', title: 'Refund', status: 'running', createdAt: item.createdAt }],
      nextCursor: 'abc',
    });
    expect(
      conversationListView(ListConversationsResponse.fromPartial({ data: [item], nextCursor: '' })),
    ).toEqual({
      data: [{ id: 'c2', agentId: 'support', status: 'running', createdAt: item.createdAt }],
      nextCursor: null,
    });
    expect(conversationListView(ListConversationsResponse.fromPartial({}))).toEqual({
      data: [],
      nextCursor: null,
    });
  });

  it('reads ?limit= (1–100; absent: the default) and ?cursor=, refusing bad ones by name', () => {
    expect(parseListConversations({})).toEqual({ limit: 0, cursor: '' });
    expect(parseListConversations({ limit: '100', cursor: 'AbC-_9' })).toEqual({
      limit: 100,
      cursor: 'AbC-_9',
    });
    for (const limit of ['0', '101', '-1', '1.5', 'ten', '', ['1', '2']]) {
      const error = (() => {
        try {
          return parseListConversations({ limit });
        } catch (e) {
          return e;
        }
      })();
      expect(error, String(limit)).toBeInstanceOf(ValidationError);
      expect(error).toMatchObject({ details: { field: 'limit' } });
    }
    expect(() => parseListConversations({ cursor: 'no spaces' })).toThrow(/^cursor/);
    expect(() => parseListConversations({ cursor: ['a', 'b'] })).toThrow(/^cursor/);
  });
});
