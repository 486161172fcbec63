// The agent service as a separate process on real NATS and MongoDB, called over gRPC as the
// gateway calls it: tenant configuration, a turn answered by the real @langchain/openai client
// talking to the test kit's fake OpenAI server, roles, tenant isolation, errors as statuses,
// and a clean stop.
import type { ServiceClientConstructor, ServiceError } from '@grpc/grpc-js';
import { credentials, loadPackageDefinition, status } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import type { SealedSecret } from '@keel/events';
import { uuidv7 } from '@keel/core';
import { MongoEventStore } from '@keel/core/mongodb';
import { PROTO_LOADER_OPTIONS, SecretBox, protoRoot } from '@keel/runtime';
import type { FakeOpenAI, ProcessHandle } from '@keel/testkit';
import {
  eventually,
  fakeReply,
  freePort,
  lastUserMessageIncludes,
  mongoUrlFor,
  startFakeOpenAI,
  startProcess,
  testInfra,
  uniqueName,
} from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

type Role = 'admin' | 'editor' | 'viewer' | 'operator';
type Callback = (error: ServiceError | null, response?: unknown) => void;
type Unary = (request: object, callback: Callback) => void;
type UnaryWithOptions = (request: object, options: { deadline: number }, callback: Callback) => void;
interface AgentClient {
  close(): void;
}

const { natsUrl, mongoUrl: baseMongoUrl } = testInfra();
const mongoUrl = mongoUrlFor(uniqueName('agentgrpc'), baseMongoUrl);
const masterKey = SecretBox.generateKey();
const tenant = uniqueName('acme');
const otherTenant = uniqueName('globex');
const TENANT_KEY = 'sk-tenant-only-9876';

let fake: FakeOpenAI;
let agent: ProcessHandle;
let client: AgentClient;

const context = (role: Role, tenantId = tenant) => ({
  tenantId,
  actor: { keyId: `key-${role}`, role, userId: 'user-7' },
  correlationId: uniqueName('req'),
});

/** One unary call of keel.agent.v1.AgentService, by its Nest (camelCase) name. */
const call = <T = Record<string, unknown>>(method: string, request: object): Promise<T> =>
  new Promise((resolve, reject) => {
    const rpc = (client as unknown as Record<string, Unary>)[method];
    if (!rpc) throw new Error(`no RPC ${method}`);
    rpc.call(client, request, (error, response) => (error ? reject(error) : resolve(response as T)));
  });

/** The status a call failed with, and its message (grpc-js `details`). */
const failure = async (promise: Promise<unknown>): Promise<{ code: status; details: string }> => {
  try {
    await promise;
  } catch (error) {
    const { code, details } = error as ServiceError;
    return { code, details };
  }
  throw new Error('the call succeeded');
};

const conversation = async (conversationId: string, role: Role = 'viewer', tenantId = tenant) =>
  (
    await call<{ conversation: Record<string, unknown> }>('getConversation', {
      context: context(role, tenantId),
      request: { conversationId },
    })
  ).conversation;

const createConversation = async (): Promise<string> => {
  const { conversation: created } = await call<{ conversation: { id: string; status: string } }>(
    'createConversation',
    { context: context('editor'), request: { agentId: 'helper', title: 'Weather' } },
  );
  expect(created.status).toBe('CONVERSATION_STATUS_IDLE');
  return created.id;
};

const weatherTool = {
  name: 'get_weather',
  description: 'Current weather for a city.',
  inputSchemaJson: JSON.stringify({
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
  }),
  kind: 'webhook',
  url: 'http://127.0.0.1:9/weather',
  roles: ['editor', 'admin'],
};

beforeAll(async () => {
  fake = await startFakeOpenAI();
  const port = await freePort();
  agent = await startProcess({
    name: 'agent',
    entry: 'services/agent/src/main.ts',
    env: {
      MONGODB_URL: mongoUrl,
      NATS_URL: natsUrl,
      GRPC_PORT: String(port),
      KEEL_NATS_STREAM: uniqueName('AGENTGRPC'),
      KEEL_SUBJECT_PREFIX: `test.${uniqueName('agentgrpc')}`,
      KEEL_MASTER_KEY: masterKey,
      // The process-wide defaults; the tenant's own key and endpoint (PutProvider) win over them.
      OPENAI_API_KEY: 'sk-env-default-0000',
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      // The fake provider the tenant points its baseUrl at listens on loopback: opened on purpose.
      KEEL_EGRESS_ALLOW: '127.0.0.0/8,::1/128',
      LOG_LEVEL: 'info',
    },
    readyLine: /"msg":"ready"/,
    readyTimeoutMs: 60_000,
  });
  const definition = loadSync('keel/agent/v1/agent.proto', {
    ...PROTO_LOADER_OPTIONS,
    includeDirs: [protoRoot()],
  });
  const root = loadPackageDefinition(definition) as unknown as {
    keel: { agent: { v1: { AgentService: ServiceClientConstructor } } };
  };
  client = new root.keel.agent.v1.AgentService(
    `127.0.0.1:${port}`,
    credentials.createInsecure(),
  ) as unknown as AgentClient;
});

afterAll(async () => {
  client?.close();
  await fake?.close();
});

describe('tenant configuration over gRPC', () => {
  it('stores a webhook tool with the API defaults filled in, and lists it after the built-ins', async () => {
    const { tool } = await call('putTool', { context: context('admin'), tool: weatherTool });
    expect(tool).toEqual({
      ...weatherTool,
      approval: 'never',
      phases: [],
      timeoutMs: 10_000,
      builtin: false,
      memoryJson: '',
      affects: [],
      outputSchemaJson: '',
      userRoles: [],
    });

    const { data } = await call<{ data: Array<{ name: string; builtin: boolean; kind: string }> }>(
      'listTools',
      { context: context('admin') },
    );
    expect(data.map(({ name, builtin, kind }) => ({ name, builtin, kind }))).toEqual([
      { name: 'current_time', builtin: true, kind: 'builtin' },
      { name: 'calculator', builtin: true, kind: 'builtin' },
      { name: 'get_weather', builtin: false, kind: 'webhook' },
    ]);
  });

  it('refuses a bad tool with INVALID_ARGUMENT naming the field, and writes nothing', async () => {
    expect(
      await failure(
        call('putTool', { context: context('admin'), tool: { ...weatherTool, name: 'calculator' } }),
      ),
    ).toEqual({ code: status.INVALID_ARGUMENT, details: expect.stringMatching(/^name: .*reserved/) });
    expect(
      await failure(
        call('putTool', {
          context: context('admin'),
          tool: { ...weatherTool, name: 'broken', inputSchemaJson: '{"type":"object"' },
        }),
      ),
    ).toEqual({ code: status.INVALID_ARGUMENT, details: 'tool.inputSchemaJson is not valid JSON' });
    const { data } = await call<{ data: unknown[] }>('listTools', { context: context('admin') });
    expect(data).toHaveLength(3);
  });

  it('refuses an agent with a tool the tenant does not have, naming the tool', async () => {
    const failed = await failure(
      call('putAgent', {
        context: context('admin'),
        agent: { agentId: 'helper', model: 'openai:gpt-4o-mini', tools: ['get_weather', 'teleport'] },
      }),
    );
    expect(failed).toEqual({ code: status.INVALID_ARGUMENT, details: 'tools: unknown tools: teleport' });
    expect(await failure(call('getAgent', { context: context('admin'), agentId: 'helper' }))).toMatchObject({
      code: status.NOT_FOUND,
    });
  });

  it('stores an agent and reads it back', async () => {
    const stored = {
      agentId: 'helper',
      model: 'openai:gpt-4o-mini',
      instructions: 'You are terse.',
      tools: ['get_weather', 'calculator'],
      maxSteps: 8,
      temperature: 0,
      toolResultMaxChars: 8_000,
      phasesJson: '',
      optionsJson: '',
      // Which values follow the tenant's defaults is the gateway's to say (from what a PUT left out).
      fromDefaults: [],
    };
    const { agent: put } = await call('putAgent', {
      context: context('admin'),
      agent: {
        agentId: 'helper',
        model: 'openai:gpt-4o-mini',
        instructions: 'You are terse.',
        tools: stored.tools,
      },
    });
    expect(put).toEqual(stored);
    expect(await call('getAgent', { context: context('admin'), agentId: 'helper' })).toEqual({
      agent: stored,
    });
    expect(await call('listAgents', { context: context('admin') })).toEqual({ data: [stored] });
    expect(await failure(call('getAgent', { context: context('admin'), agentId: 'nobody' }))).toEqual({
      code: status.NOT_FOUND,
      details: 'agent nobody not found',
    });
  });

  it('configures a provider without ever returning or storing the key in clear', async () => {
    const response = await call('putProvider', {
      context: context('admin'),
      provider: 'openai',
      apiKey: TENANT_KEY,
      baseUrl: fake.url,
    });
    expect(response).toEqual({ provider: 'openai', configured: true });

    const store = await MongoEventStore.connect(mongoUrl);
    try {
      const events = await store.read(tenant, `tenantconfig-${tenant}`);
      const configured = events.find((e) => e.type === 'ProviderConfigured');
      expect(configured?.data).toMatchObject({ provider: 'openai', baseUrl: fake.url });
      expect(JSON.stringify(events)).not.toContain(TENANT_KEY);
      const sealed = (configured?.data as { apiKey: SealedSecret }).apiKey;
      expect(new SecretBox(masterKey).open(sealed, `${tenant}/provider/openai`)).toBe(TENANT_KEY);
    } finally {
      await store.close();
    }
  });

  it('rotates the webhook secret: shown once, stored sealed for this tenant', async () => {
    const { secret } = await call<{ secret: string }>('rotateWebhookSecret', { context: context('admin') });
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(secret, 'base64url')).toHaveLength(32);
    const { secret: second } = await call<{ secret: string }>('rotateWebhookSecret', {
      context: context('admin'),
    });
    expect(second).not.toBe(secret);

    const store = await MongoEventStore.connect(mongoUrl);
    try {
      const events = await store.read(tenant, `tenantconfig-${tenant}`);
      const rotated = events.filter((e) => e.type === 'WebhookSecretRotated');
      expect(rotated).toHaveLength(2);
      expect(JSON.stringify(events)).not.toContain(second);
      const sealed = (rotated[1]?.data as { secret: SealedSecret }).secret;
      expect(new SecretBox(masterKey).open(sealed, `${tenant}/webhook`)).toBe(second);
      expect(() => new SecretBox(masterKey).open(sealed, `${otherTenant}/webhook`)).toThrow();
    } finally {
      await store.close();
    }
  });

  it('lets only admin keys touch the configuration', async () => {
    for (const role of ['editor', 'viewer', 'operator'] as const) {
      expect(await failure(call('putTool', { context: context(role), tool: weatherTool }))).toMatchObject({
        code: status.PERMISSION_DENIED,
      });
      expect(await failure(call('listAgents', { context: context(role) }))).toMatchObject({
        code: status.PERMISSION_DENIED,
      });
    }
  });
});

describe('conversations over gRPC', () => {
  let conversationId = '';

  it('runs a turn: the model answers through the tenant key and endpoint, the conversation shows it', async () => {
    conversationId = await createConversation();
    fake.on(lastUserMessageIncludes('weather in Oslo'), fakeReply.text('Cold and clear in Oslo.'));

    const { turnId, version } = await call<{ turnId: string; version: number | string }>('submitMessage', {
      context: context('editor'),
      request: { conversationId, content: 'What is the weather in Oslo?' },
    });
    expect(turnId).toMatch(/^[0-9a-f-]{36}$/);
    // The version before the message: only ConversationCreated (1) precedes it; the turn comes after.
    expect(Number(version)).toBe(1);

    const done = await eventually(
      async () => {
        const state = await conversation(conversationId);
        expect(state.status).toBe('CONVERSATION_STATUS_IDLE');
        expect(state.messages).toHaveLength(2);
        return state;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    expect(done).toMatchObject({
      id: conversationId,
      agentId: 'helper',
      messages: [
        { role: 'MESSAGE_ROLE_USER', content: 'What is the weather in Oslo?', toolCalls: [] },
        { role: 'MESSAGE_ROLE_ASSISTANT', content: 'Cold and clear in Oslo.', toolCalls: [] },
      ],
      pendingApprovals: [],
      usage: { promptTokens: expect.any(Number), completionTokens: expect.any(Number) },
    });
    expect(done.version).toBeGreaterThanOrEqual(5);

    const request = fake.requests.find((r) => r.body && lastUserMessageIncludes('weather in Oslo')(r.body));
    expect(request?.authorization).toEqual({ present: true, last4: TENANT_KEY.slice(-4) });
    expect(request?.body?.tools?.map((t) => t.function.name).sort()).toEqual(['calculator', 'get_weather']);
  });

  it('refuses a viewer key on SubmitMessage, and an operator key on reads', async () => {
    expect(
      await failure(
        call('submitMessage', { context: context('viewer'), request: { conversationId, content: 'hi' } }),
      ),
    ).toMatchObject({ code: status.PERMISSION_DENIED, details: expect.stringContaining('viewer') });
    expect(await failure(conversation(conversationId, 'operator'))).toMatchObject({
      code: status.PERMISSION_DENIED,
    });
  });

  it("answers another tenant's conversation with NOT_FOUND, for reads and writes", async () => {
    expect(await failure(conversation(conversationId, 'admin', otherTenant))).toEqual({
      code: status.NOT_FOUND,
      details: 'conversation not found',
    });
    expect(
      await failure(
        call('submitMessage', {
          context: context('editor', otherTenant),
          request: { conversationId, content: 'hi' },
        }),
      ),
    ).toMatchObject({ code: status.NOT_FOUND });
  });

  it('answers an unknown approval with NOT_FOUND and a missing decision with INVALID_ARGUMENT', async () => {
    expect(
      await failure(
        call('decideApproval', {
          context: context('editor'),
          request: { conversationId, approvalId: 'no-such-approval', decision: 'DECISION_APPROVE' },
        }),
      ),
    ).toEqual({ code: status.NOT_FOUND, details: 'approval not found' });
    expect(
      await failure(
        call('decideApproval', {
          context: context('editor'),
          request: { conversationId, approvalId: 'no-such-approval' },
        }),
      ),
    ).toMatchObject({ code: status.INVALID_ARGUMENT, details: expect.stringContaining('request.decision') });
  });

  // A cancel with no running turn is a conflict (HTTP 409), not a missing precondition: the
  // caller's view was stale, and re-reading the conversation tells it what happened.
  it('answers CancelTurn on an idle conversation with ABORTED', async () => {
    expect(
      await failure(call('cancelTurn', { context: context('editor'), request: { conversationId } })),
    ).toEqual({
      code: status.ABORTED,
      details: 'no turn is running',
    });
  });

  it('refuses a second message while a turn runs (ABORTED), and CancelTurn aborts the model call', async () => {
    const busyId = await createConversation();
    fake.on(lastUserMessageIncludes('think forever'), fakeReply.hang());
    const seen = fake.requests.length;
    const { turnId } = await call<{ turnId: string }>('submitMessage', {
      context: context('editor'),
      request: { conversationId: busyId, content: 'Please think forever.' },
    });
    const hanging = await fake.waitForRequest(seen, 30_000);

    expect(
      await failure(
        call('submitMessage', {
          context: context('editor'),
          request: { conversationId: busyId, content: 'hello?' },
        }),
      ),
    ).toEqual({ code: status.ABORTED, details: 'a turn is already running' });

    expect(
      await call('cancelTurn', { context: context('editor'), request: { conversationId: busyId } }),
    ).toEqual({
      turnId,
    });
    await fake.waitForClientClose(hanging.index, 15_000);
    await eventually(async () =>
      expect((await conversation(busyId)).status).toBe('CONVERSATION_STATUS_IDLE'),
    );
  });

  it('lists the tenant its conversations newest first, a page at a time, for viewers and up', async () => {
    const newest = await createConversation();
    type Page = { data: Array<{ id: string; title: string; status: string }>; nextCursor: string };
    const list = (request: object, role: Role = 'viewer', tenantId = tenant) =>
      call<Page>('listConversations', { context: context(role, tenantId), request });

    const all = await list({});
    expect(all.nextCursor).toBe('');
    expect(all.data[0]).toMatchObject({
      id: newest,
      agentId: 'helper',
      title: 'Weather',
      status: 'CONVERSATION_STATUS_IDLE',
    });
    expect(all.data.map((c) => c.id)).toContain(conversationId);
    expect(all.data.map((c) => c.id)).toEqual([...all.data.map((c) => c.id)].sort().reverse());

    const first = await list({ limit: 1 });
    expect(first.data.map((c) => c.id)).toEqual([newest]);
    expect(first.nextCursor).not.toBe('');
    const second = await list({ limit: 1, cursor: first.nextCursor });
    expect(second.data.map((c) => c.id)).toEqual([all.data[1]?.id]);

    expect((await list({}, 'admin', otherTenant)).data).toEqual([]);
    expect(await failure(list({ cursor: 'nonsense' }))).toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: expect.stringContaining('cursor'),
    });
    expect(await failure(list({}, 'operator'))).toMatchObject({ code: status.PERMISSION_DENIED });
  });

  it('lists a conversation whose creator died before indexing it, once the index consumer catches up', async () => {
    const orphan = uuidv7();
    const store = await MongoEventStore.connect(mongoUrl);
    try {
      await store.append(tenant, `conversation-${orphan}`, [
        {
          type: 'ConversationCreated',
          data: { conversationId: orphan, agentId: 'helper', createdAt: new Date().toISOString() },
          metadata: { correlationId: uniqueName('req') },
        },
      ]);
    } finally {
      await store.close();
    }
    await eventually(
      async () => {
        const page = await call<{ data: Array<{ id: string }> }>('listConversations', {
          context: context('viewer'),
          request: { limit: 100 },
        });
        expect(page.data.map((c) => c.id)).toContain(orphan);
      },
      { timeoutMs: 20_000, intervalMs: 200 },
    );
  });

  it('commits no message whose deadline passed while it was being decided: DEADLINE_EXCEEDED, nothing written', async () => {
    // Written behind the agent's back: the agent remembers nothing of it, so the message waits
    // for a load from the store (several ms on FerretDB) and the 4 ms deadline passes meanwhile.
    const conversationId = uuidv7();
    const store = await MongoEventStore.connect(mongoUrl);
    try {
      await store.append(tenant, `conversation-${conversationId}`, [
        {
          type: 'ConversationCreated',
          data: { conversationId, agentId: 'helper', createdAt: new Date().toISOString() },
          metadata: { correlationId: uniqueName('req') },
        },
      ]);
    } finally {
      await store.close();
    }
    const send = (content: string, deadlineMs: number) =>
      new Promise((resolve, reject) => {
        const rpc = (client as unknown as Record<string, UnaryWithOptions>).submitMessage!;
        const request = { context: context('editor'), request: { conversationId, content } };
        rpc.call(client, request, { deadline: Date.now() + deadlineMs }, (error, response) =>
          error ? reject(error) : resolve(response),
        );
      });
    expect(await failure(send('too late', 4))).toMatchObject({ code: status.DEADLINE_EXCEEDED });
    // Had the agent gone on after the deadline, its commit would be seen within this wait.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await conversation(conversationId)).toMatchObject({ messages: [] });
  });

  it('refuses a call without a context or tenant with INVALID_ARGUMENT naming it', async () => {
    expect(await failure(call('getConversation', { request: { conversationId } }))).toEqual({
      code: status.INVALID_ARGUMENT,
      details: 'context is required',
    });
    expect(
      await failure(
        call('getConversation', {
          context: { ...context('viewer'), tenantId: '' },
          request: { conversationId },
        }),
      ),
    ).toEqual({ code: status.INVALID_ARGUMENT, details: 'context.tenantId is required' });
  });
});

describe('the agent process', () => {
  it('stops on SIGTERM, draining its consumers (turns twice, conversation index, budget settlement, the run manager twice, the sub-agent manager, client call deadlines), and exits 0', async () => {
    client.close();
    expect(await agent.kill('SIGTERM', 15_000)).toEqual({ code: 0, signal: null });
    const drained = agent.stdoutLines.find((line) => line.includes('"step":"consumers-drained"'));
    expect(drained, agent.tail()).toMatch(/"consumers":8/);
  });
});
