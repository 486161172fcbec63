// Typed grpc-js clients of Keel's public gRPC API for end-to-end tests, on the generated service
// definitions: a bearer key as metadata per call (none when undefined), unary calls, their
// response headers, and SendMessage's stream. Requests are filled by the generated fromPartial,
// answers are the generated messages; a failed call rejects with the ServiceError.
import type { ClientReadableStream, Metadata, ServiceError } from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import type {
  DeepPartial as ConversationsPartial,
  TurnEvent,
} from '@keel/proto/keel/conversations/v1/conversations';
import {
  CancelTurnRequest,
  ConversationServiceService,
  CreateConversationRequest,
  DecideApprovalRequest,
  GetConversationRequest,
  ListConversationsRequest,
  SendMessageRequest,
  SubmitToolResultRequest,
} from '@keel/proto/keel/conversations/v1/conversations';
import type { DeepPartial } from '@keel/proto/keel/pricing/v1/pricing';
import {
  ComputeCostRequest,
  GetPriceRequest,
  ListModelsRequest,
  PricingServiceService,
  SetPriceRequest,
} from '@keel/proto/keel/pricing/v1/pricing';
import type { RequestMessages, RpcRequest, RpcResponse } from '@keel/runtime';
import { callUnary, GrpcClient } from '@keel/runtime';

/** The metadata of a call: the bearer key (none when undefined) and any extra entries. */
const metadataOf = (key: string | undefined, extra: Record<string, string> = {}) => ({
  ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
  ...extra,
});

type ConversationService = typeof ConversationServiceService;
type ConversationRpc = Exclude<keyof ConversationService, 'sendMessage'>;
type ConversationRequestOf<R extends ConversationRpc> = RpcRequest<ConversationService, R>;

/** Each unary ConversationService RPC's request message, to fill the fields a test leaves out. */
const CONVERSATION_REQUESTS: RequestMessages<ConversationService, ConversationRpc> = {
  createConversation: CreateConversationRequest,
  getConversation: GetConversationRequest,
  listConversations: ListConversationsRequest,
  decideApproval: DecideApprovalRequest,
  cancelTurn: CancelTurnRequest,
  submitToolResult: SubmitToolResultRequest,
};

/** A ConversationService client on a gateway's gRPC port. */
export const conversationsClient = (address: string) => {
  const client = new GrpcClient(address, { deadlineMs: 30_000 });
  const call = <R extends ConversationRpc>(
    rpc: R,
    key: string | undefined,
    request: ConversationsPartial<ConversationRequestOf<R>>,
    extra: Record<string, string> = {},
    onHeaders?: (headers: Metadata) => void,
  ): Promise<RpcResponse<ConversationService, R>> =>
    callUnary(client, ConversationServiceService, CONVERSATION_REQUESTS, rpc, request, {
      metadata: metadataOf(key, extra),
      ...(onHeaders ? { onHeaders } : {}),
    });
  const unary = <R extends ConversationRpc>(
    rpc: R,
    key: string | undefined,
    request: ConversationsPartial<ConversationRequestOf<R>>,
    extra: Record<string, string> = {},
  ) => call(rpc, key, request, extra);
  /** The response headers (initial metadata) of a unary call. */
  const headersOf = <R extends ConversationRpc>(
    rpc: R,
    key: string,
    request: ConversationsPartial<ConversationRequestOf<R>>,
    extra: Record<string, string>,
  ) =>
    new Promise<Metadata>((resolve, reject) => {
      call(rpc, key, request, extra, resolve).catch(reject);
    });
  /** SendMessage's stream of TurnEvents. */
  const stream = (
    key: string | undefined,
    request: ConversationsPartial<SendMessageRequest>,
  ): ClientReadableStream<TurnEvent> =>
    client.serverStream(ConversationServiceService.sendMessage, SendMessageRequest.fromPartial(request), {
      metadata: metadataOf(key),
      deadlineMs: 180_000,
    });
  return { unary, headersOf, stream, close: () => client.close() };
};

/** A ConversationService client. */
export type ConversationsClient = ReturnType<typeof conversationsClient>;

type PricingService = typeof PricingServiceService;
type PricingRpc = keyof PricingService;
type PricingRequestOf<R extends PricingRpc> = RpcRequest<PricingService, R>;

/** Each PricingService RPC's request message, to fill the fields a test leaves out with defaults. */
const PRICING_REQUESTS: RequestMessages<PricingService> = {
  getPrice: GetPriceRequest,
  listModels: ListModelsRequest,
  computeCost: ComputeCostRequest,
  setPrice: SetPriceRequest,
};

/**
 * A typed PricingService client (on a gateway's port, or the pricing service's own) on the
 * generated definition: a bearer key as metadata per call (none when undefined); a failed call
 * rejects with the ServiceError.
 */
export const pricingClient = (address: string) => {
  const client = new GrpcClient(address, { deadlineMs: 30_000 });
  const unary = <R extends PricingRpc>(
    rpc: R,
    key: string | undefined,
    request: DeepPartial<PricingRequestOf<R>>,
  ): Promise<RpcResponse<PricingService, R>> =>
    callUnary(client, PricingServiceService, PRICING_REQUESTS, rpc, request, { metadata: metadataOf(key) });
  return { unary, close: () => client.close() };
};

/** The error a gRPC call failed with (undefined when it succeeded). */
export const failureOf = async (call: Promise<unknown>): Promise<ServiceError | undefined> => {
  try {
    await call;
    return undefined;
  } catch (error) {
    return error as ServiceError;
  }
};

/** The status code a gRPC call failed with. */
export const codeOf = async (call: Promise<unknown>): Promise<number | undefined> =>
  (await failureOf(call))?.code;

/** The status a SendMessage stream ends with (OK when it ends normally), its frames read and dropped. */
export const sendStatus = (
  client: ConversationsClient,
  key: string,
  request: ConversationsPartial<SendMessageRequest>,
) =>
  new Promise<{ code: number; details: string }>((resolve) => {
    const call = client.stream(key, request);
    call.on('data', () => undefined);
    call.on('error', (error: ServiceError) => resolve({ code: error.code, details: error.details }));
    call.on('end', () => resolve({ code: status.OK, details: '' }));
  });
