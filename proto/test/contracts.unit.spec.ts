import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import { loadSync, type Options, type ServiceDefinition } from '@grpc/proto-loader';
import type { Metadata } from '@grpc/grpc-js';
import { Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { AgentServiceControllerMethods } from '@keel/proto/keel/agent/v1/agent';
import {
  type ConversationServiceController,
  ConversationServiceControllerMethods,
  type CreateConversationResponse,
  type CancelTurnResponse,
  type DecideApprovalResponse,
  Decision,
  type GetConversationResponse,
  IfBusy,
  type ListConversationsResponse,
  SendMessageRequest,
  type SubmitToolResultResponse,
  TurnEvent,
} from '@keel/proto/keel/conversations/v1/conversations';
import { EventEnvelope } from '@keel/proto/keel/events/v1/envelope';

const protoRoot = dirname(dirname(fileURLToPath(import.meta.url)));

/** The RPCs API.md's "gRPC" section names for conversations, as Nest handler names. */
const conversationMethods = [
  'createConversation',
  'getConversation',
  'listConversations',
  'sendMessage',
  'decideApproval',
  'cancelTurn',
  'submitToolResult',
] as const;

/** The loader options a Nest gRPC server needs so handlers get what the ts-proto types say. */
const nestLoaderOptions: Options = {
  keepCase: false,
  longs: Number,
  defaults: true,
  includeDirs: [protoRoot],
};

/** A payload that a MongoDB sub-document or google.protobuf.Struct would not carry unchanged. */
const awkwardJson =
  '{"a.b":{"$set":[1,[2,[3]]]},"$where":"x","ünï":"héllo 🌍 中文 \\u0000","max":9007199254740991,' +
  '"huge":123456789012345678901234567890,"neg":-0.5e-300,"nested":[{"k.k":{"$":null}}]}';

const envelope: EventEnvelope = {
  eventId: '01J9ZCQ8Y3W5',
  type: 'UserMessageAdded',
  tenantId: 'tenant-1',
  streamName: 'conversation-c1',
  version: Number.MAX_SAFE_INTEGER,
  globalPosition: 2 ** 40 + 7,
  commitId: 'commit-9',
  recordedAt: '2025-01-31T12:00:00.123Z',
  metadata: {
    correlationId: 'req-1',
    causationId: 'evt-0',
    actor: { keyId: 'key-1', role: 'editor', userId: 'user.with.dots$' },
    extra: { 'trace.id': 'abc', $x: 'ü' },
  },
  dataJson: awkwardJson,
};

describe('EventEnvelope', () => {
  it('round-trips through protobuf bytes with its JSON payload byte for byte', () => {
    const decoded = EventEnvelope.decode(EventEnvelope.encode(envelope).finish());

    expect(decoded).toEqual(envelope);
    expect(decoded.dataJson).toBe(awkwardJson);
    expect(JSON.parse(decoded.dataJson)).toEqual(JSON.parse(awkwardJson));
    expect(decoded.version).toBe(2 ** 53 - 1);
  });

  it('round-trips through proto3 JSON', () => {
    const json = JSON.parse(JSON.stringify(EventEnvelope.toJSON(envelope))) as unknown;

    expect(EventEnvelope.fromJSON(json)).toEqual(envelope);
  });

  it('refuses to decode a version beyond 2^53 rather than rounding it', () => {
    const bytes = new BinaryWriter()
      .uint32((5 << 3) | 0)
      .uint64(2n ** 53n + 1n)
      .finish();

    expect(() => EventEnvelope.decode(bytes)).toThrow(/MAX_SAFE_INTEGER|Value is larger/);
  });
});

describe('ConversationService', () => {
  it('decorates every RPC API.md names as a Nest gRPC handler of the fully qualified service', () => {
    const reply = <T>(value: T): Promise<T> => Promise.resolve(value);
    class Controller implements ConversationServiceController {
      createConversation(): Promise<CreateConversationResponse> {
        return reply({});
      }
      getConversation(): Promise<GetConversationResponse> {
        return reply({});
      }
      listConversations(): Promise<ListConversationsResponse> {
        return reply({ data: [], nextCursor: '' });
      }
      sendMessage(_request: SendMessageRequest, _metadata?: Metadata): Observable<TurnEvent> {
        return new Observable<TurnEvent>((subscriber) => subscriber.complete());
      }
      decideApproval(): Promise<DecideApprovalResponse> {
        return reply({ approvalId: 'a1', decision: Decision.APPROVE });
      }
      cancelTurn(): Promise<CancelTurnResponse> {
        return reply({ turnId: '' });
      }
      submitToolResult(): Promise<SubmitToolResultResponse> {
        return reply({ toolCallId: 'c1' });
      }
    }
    ConversationServiceControllerMethods()(Controller);

    for (const method of conversationMethods) {
      const handler: unknown = Controller.prototype[method];
      expect(Reflect.getMetadata('microservices:pattern', handler as object), method).toEqual([
        { service: 'keel.conversations.v1.ConversationService', rpc: method, streaming: 'no_stream' },
      ]);
    }
  });

  it('is served from the .proto with SendMessage as the only server-streaming RPC', () => {
    const definition = loadSync(
      join(protoRoot, 'keel/conversations/v1/conversations.proto'),
      nestLoaderOptions,
    );
    const service = definition['keel.conversations.v1.ConversationService'] as ServiceDefinition;

    const methods = Object.values(service).map((m) => [m.originalName, m.requestStream, m.responseStream]);
    expect(methods).toEqual(conversationMethods.map((name) => [name, false, name === 'sendMessage']));
  });

  it('has the conversation operations on the agent service the gateway relays to (unary only), and tenant configuration', () => {
    const definition = loadSync(join(protoRoot, 'keel/agent/v1/agent.proto'), nestLoaderOptions);
    const service = definition['keel.agent.v1.AgentService'] as ServiceDefinition;

    const methods = Object.values(service).map((m) => m.originalName);
    // Every conversation operation but the streaming send: the gateway streams a turn itself from
    // SubmitMessage's version and the conversation's log.
    const relayed = conversationMethods.filter((name) => name !== 'sendMessage');
    expect(methods).toEqual(expect.arrayContaining([...relayed]));
    expect(methods).not.toContain('sendMessage');
    expect(Object.values(service).every((m) => !m.requestStream && !m.responseStream)).toBe(true);
    expect(methods.filter((m) => !(conversationMethods as readonly string[]).includes(m!))).toEqual([
      'submitMessage',
      'updateConversation',
      'submitFeedback',
      'putTool',
      'listTools',
      'putAgent',
      'getAgent',
      'listAgents',
      'putProvider',
      'rotateWebhookSecret',
    ]);
    expect(service['SubmitMessage']?.path).toBe('/keel.agent.v1.AgentService/SubmitMessage');
    expect(typeof AgentServiceControllerMethods()).toBe('function');
  });

  it('hands a Nest handler the request ts-proto encoded, field for field', () => {
    const definition = loadSync(
      join(protoRoot, 'keel/conversations/v1/conversations.proto'),
      nestLoaderOptions,
    );
    const service = definition['keel.conversations.v1.ConversationService'] as ServiceDefinition;
    const request: SendMessageRequest = {
      conversationId: 'c1',
      content: 'héllo $ . 🌍',
      ifBusy: IfBusy.ENQUEUE,
      actingUserId: 'u1',
      idempotencyKey: 'k1',
      contextJson: '{"page":"home"}',
      userRole: 'viewer',
      replaceFrom: 'm0',
    };

    const seen = service['SendMessage']?.requestDeserialize(
      Buffer.from(SendMessageRequest.encode(request).finish()),
    );

    expect(seen).toEqual(request);
  });
});

describe('TurnEvent', () => {
  /** One frame per row of API.md's turn stream table, in the order a turn produces them. */
  const frames: TurnEvent[] = [
    { id: '3', event: 'turn.started', turnStarted: { turnId: 't1' } },
    { id: '3.1', event: 'message.delta', messageDelta: { turnId: 't1', text: 'Hé' } },
    {
      id: '4',
      event: 'tool.call',
      toolCall: { turnId: 't1', toolCallId: 'tc1', name: 'get_weather', argsJson: '{"city":"Zürich"}' },
    },
    {
      id: '5',
      event: 'approval.required',
      approvalRequired: {
        turnId: 't1',
        approvalId: 'a1',
        toolCallId: 'tc1',
        name: 'get_weather',
        argsJson: '{}',
      },
    },
    {
      id: '6',
      event: 'approval.decided',
      approvalDecided: { approvalId: 'a1', decision: Decision.DENY, by: 'u1' },
    },
    {
      id: '7',
      event: 'tool.result',
      toolResult: {
        turnId: 't1',
        toolCallId: 'tc1',
        name: 'get_weather',
        ok: false,
        error: 'denied by u1: no',
      },
    },
    { id: '8', event: 'message.completed', messageCompleted: { turnId: 't1', messageId: 'm2', text: 'Hé!' } },
    {
      id: '9',
      event: 'usage',
      usage: {
        turnId: 't1',
        model: 'openai:gpt-4o-mini',
        promptTokens: 120,
        completionTokens: 8,
        cacheReadTokens: 64,
        costUsd: 0.0000123,
      },
    },
    { id: '9.1', event: 'context', context: { turnId: 't1', contextTokens: 128, windowTokens: 128000 } },
    {
      id: '10',
      event: 'turn.completed',
      turnCompleted: { turnId: 't1', finishReason: 'stop', affected: ['pages'] },
    },
    {
      id: '11',
      event: 'turn.failed',
      turnFailed: { turnId: 't2', error: { code: 'unavailable', message: 'model down' } },
    },
    { id: '12', event: 'turn.cancelled', turnCancelled: { turnId: 't3' } },
  ];

  it.each(frames)('$event round-trips through ts-proto and through the Nest loader', (frame) => {
    const bytes = TurnEvent.encode(frame).finish();
    const definition = loadSync(
      join(protoRoot, 'keel/conversations/v1/conversations.proto'),
      nestLoaderOptions,
    );
    const service = definition['keel.conversations.v1.ConversationService'] as ServiceDefinition;

    expect(TurnEvent.decode(bytes)).toEqual(frame);
    expect(service['SendMessage']?.responseDeserialize(Buffer.from(bytes))).toEqual(frame);
  });

  it('reads an unknown-price usage as having no cost, not a zero cost', () => {
    const frame = TurnEvent.decode(
      TurnEvent.encode({
        id: '9',
        event: 'usage',
        usage: { turnId: 't1', model: 'x:y', promptTokens: 1, completionTokens: 1, cacheReadTokens: 0 },
      }).finish(),
    );

    expect(frame.usage?.costUsd).toBeUndefined();
  });
});

describe('generated code', () => {
  it('is what the committed .proto files generate, and buf lint is clean', () => {
    const result = spawnSync(process.execPath, [join(protoRoot, 'scripts/generate.mjs'), '--check'], {
      encoding: 'utf8',
    });

    expect(result.stderr + result.stdout).toContain('gen/ is up to date');
    expect(result.status).toBe(0);
  }, 60_000);
});
