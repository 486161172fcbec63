// Every service's gRPC server as a user without Keel's .proto files meets it: grpcurl, a
// third-party client that learns everything from server reflection. The five services run as
// separate processes on real NATS and MongoDB. On each: `list` names exactly the services it
// serves; `describe` works for each service and every message and enum they reach (fields with
// their proto names, maps, imported types, proto3 optional); and one RPC of every service answers
// a request grpcurl built from those descriptors alone.
import type { ProcessHandle } from '@keel/testkit';
import { eventually, freePort } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grpcurl } from './support/grpcurl.js';
import { gatewayRequest, jsonOf } from './support/http.js';
import {
  platformEnv,
  startAgent,
  startAudit,
  startGateway,
  startPricing,
  startTools,
} from './support/platform.js';

type Service = 'gateway' | 'agent' | 'tools' | 'audit' | 'pricing';

const HEALTH = 'grpc.health.v1.Health';

/** What each server serves, health included (reflection itself is not listed). */
const SERVED: Record<Service, string[]> = {
  gateway: [
    HEALTH,
    'keel.conversations.v1.ConversationService',
    'keel.pricing.v1.PricingService',
    'keel.usage.v1.UsageService',
    'keel.operator.v1.OperatorService',
  ],
  agent: [
    HEALTH,
    'keel.agent.v1.AgentService',
    'keel.run.v1.RunService',
    'keel.models.v1.ModelsService',
    'keel.mcp.v1.McpService',
    'keel.hooks.v1.HookService',
  ],
  tools: [HEALTH],
  audit: [HEALTH, 'keel.audit.v1.AuditService', 'keel.usage.v1.UsageService'],
  pricing: [HEALTH, 'keel.pricing.v1.PricingService'],
};

/** Fully qualified type references (`.keel.events.v1.Actor`) in grpcurl's describe output, comments left out. */
const typeReferences = (described: string): string[] =>
  described
    .split('\n')
    .filter((line) => !line.trim().startsWith('//'))
    .flatMap((line) => [...line.matchAll(/(?<![\w.])\.((?:[a-z][\w]*\.)+[A-Z]\w*(?:\.[A-Z]\w*)*)/g)])
    .map((match) => match[1] ?? '');

const today = (): string => new Date().toISOString().slice(0, 10);

/** `grpcurl <args>` that must succeed: its stdout (grpcurl's stderr in the failure message). */
const ok = async (args: string[]): Promise<string> => {
  const result = await grpcurl(args);
  expect(result.code, `grpcurl ${args.join(' ')}\n${result.stderr}${result.stdout}`).toBe(0);
  return result.stdout;
};

/** `grpcurl -d <json> [-H ...] <address> <method>` parsed as JSON. */
const call = async (
  address: string,
  method: string,
  request: unknown,
  headers: string[] = [],
): Promise<Record<string, unknown>> =>
  JSON.parse(
    await ok([
      ...headers.flatMap((header) => ['-H', header]),
      '-d',
      JSON.stringify(request),
      address,
      method,
    ]),
  ) as Record<string, unknown>;

describe('gRPC reflection with grpcurl (every service a process)', () => {
  const processes: ProcessHandle[] = [];
  const address = {} as Record<Service, string>;
  const operatorKey = `op_grpc_reflection_${Date.now()}`;
  let tenantId = '';
  let adminKey = '';

  beforeAll(async () => {
    // Fails here, with how to install it, when grpcurl is missing.
    expect((await grpcurl(['-version'])).code).toBe(0);
    const env = platformEnv('grpc-reflection');
    const ports = {} as Record<Service, number>;
    for (const service of Object.keys(SERVED) as Service[]) {
      ports[service] = await freePort();
      address[service] = `127.0.0.1:${ports[service]}`;
    }
    const httpPort = await freePort();
    const started = await Promise.allSettled([
      // No turn runs here: the model endpoint is never called.
      startAgent(env, ports.agent, 'http://127.0.0.1:9/v1'),
      startTools(env, ports.tools),
      startAudit(env, ports.audit),
      startPricing(env, ports.pricing),
      startGateway(env, { port: httpPort, grpcPort: ports.gateway, agentPort: ports.agent }, operatorKey, {
        extra: { AUDIT_GRPC_URL: address.audit, PRICING_GRPC_URL: address.pricing },
      }),
    ]);
    for (const result of started) if (result.status === 'fulfilled') processes.push(result.value);
    const failed = started.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;

    const base = `http://127.0.0.1:${httpPort}`;
    const tenant = await gatewayRequest(base, 'POST', '/v1/tenants', operatorKey, { name: 'grpcurl' });
    expect(tenant.status).toBe(201);
    tenantId = (await jsonOf(tenant)).id as string;
    const key = await gatewayRequest(base, 'POST', `/v1/tenants/${tenantId}/keys`, operatorKey, {
      role: 'admin',
    });
    adminKey = (await jsonOf(key)).key as string;
    const agent = await gatewayRequest(base, 'PUT', '/v1/agents/helper', adminKey, {
      model: 'openai:gpt-4o-mini',
    });
    expect(agent.status).toBe(200);
  });

  afterAll(async () => {
    await Promise.all(processes.map((handle) => handle.kill('SIGTERM')));
  });

  it.each(Object.keys(SERVED) as Service[])(
    '%s: grpcurl lists its services and describes each and every type they use',
    async (service) => {
      const listed = (await ok([address[service], 'list'])).trim().split('\n');
      expect(listed.sort()).toEqual([...SERVED[service]].sort());

      const seen = new Set<string>();
      const pending = [...SERVED[service]];
      while (pending.length > 0) {
        const symbol = pending.shift()!;
        if (seen.has(symbol)) continue;
        seen.add(symbol);
        const described = await ok([address[service], 'describe', symbol]);
        expect(described).toMatch(
          new RegExp(`^${symbol.replace(/\./g, '\\.')} is an? (service|message|enum):`),
        );
        pending.push(...typeReferences(described));
      }
      // Every service's request and response types, and what they hold, were described.
      expect(seen.size).toBeGreaterThan(SERVED[service].length);
      if (service !== 'tools') expect([...seen].some((name) => name.startsWith('keel.'))).toBe(true);
    },
  );

  it('the descriptors are the .proto files: maps, imports, snake_case names with their JSON names, optional', async () => {
    const gateway = address.gateway;
    expect(await ok([gateway, 'describe', 'grpc.health.v1.HealthListResponse'])).toContain(
      'map<string, .grpc.health.v1.HealthCheckResponse> statuses = 1;',
    );
    expect(await ok([gateway, 'describe', 'keel.conversations.v1.ConversationSummary'])).toMatch(
      /map<string, string> metadata = \d+;/,
    );
    const setPrice = await ok([gateway, 'describe', 'keel.pricing.v1.SetPriceRequest']);
    expect(setPrice).toContain('.keel.events.v1.Actor actor = 9;');
    expect(setPrice).toContain('double input_usd_per_mtok = 2;');
    expect(setPrice).toContain('optional double cache_read_usd_per_mtok = 4;');
    // The proto's comments come along.
    expect(setPrice).toContain('// USD per million uncached input tokens.');
    // JSON names (json_name, as protoc sets it) are what grpcurl's request template uses.
    const template = await ok(['-msg-template', gateway, 'describe', 'keel.pricing.v1.SetPriceRequest']);
    expect(template).toContain('"inputUsdPerMtok"');
    expect(template).toContain('"correlationId"');
    // A method resolves to its service's file too.
    expect(await ok([gateway, 'describe', 'keel.pricing.v1.PricingService.GetPrice'])).toContain(
      'rpc GetPrice ( .keel.pricing.v1.GetPriceRequest ) returns ( .keel.pricing.v1.GetPriceResponse );',
    );
    const agent = await ok([address.agent, 'describe', 'keel.agent.v1.CallContext']);
    expect(agent).toContain('.keel.events.v1.Actor actor = 2;');
    expect(agent).toContain('string tenant_id = 1;');
  });

  it('every server answers grpc.health.v1.Health/Check for itself and each service it serves', async () => {
    for (const service of Object.keys(SERVED) as Service[]) {
      for (const name of ['', ...SERVED[service].filter((served) => served !== HEALTH)]) {
        expect(await call(address[service], `${HEALTH}/Check`, { service: name })).toEqual({
          status: 'SERVING',
        });
      }
    }
  });

  it("the gateway: a conversation created and listed, a price and the tenant's usage, with the tenant's key", async () => {
    const auth = [`authorization: Bearer ${adminKey}`];
    const created = await call(
      address.gateway,
      'keel.conversations.v1.ConversationService/CreateConversation',
      { agent_id: 'helper', title: 'from grpcurl' },
      auth,
    );
    const conversation = created.conversation as Record<string, unknown>;
    expect(conversation).toMatchObject({ agentId: 'helper', title: 'from grpcurl' });
    await eventually(async () => {
      const listed = await call(
        address.gateway,
        'keel.conversations.v1.ConversationService/ListConversations',
        {},
        auth,
      );
      expect((listed.data as Array<Record<string, unknown>>).map((summary) => summary.id)).toEqual([
        conversation.id,
      ]);
    });

    const price = await call(
      address.gateway,
      'keel.pricing.v1.PricingService/GetPrice',
      { model: 'openai:gpt-4o' },
      auth,
    );
    expect(price.price).toMatchObject({ model: 'openai:gpt-4o', inputUsdPerMtok: expect.any(Number) });

    const usage = await call(
      address.gateway,
      'keel.usage.v1.UsageService/GetUsage',
      { from: today(), to: today() },
      auth,
    );
    expect(usage).toHaveProperty('totals');

    const refused = await grpcurl([
      '-d',
      '{}',
      address.gateway,
      'keel.conversations.v1.ConversationService/ListConversations',
    ]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('Code: Unauthenticated');
  });

  it('the agent, audit and pricing services answer their own RPCs', async () => {
    const agents = await call(address.agent, 'keel.agent.v1.AgentService/ListAgents', {
      context: { tenant_id: tenantId, actor: { key_id: 'grpcurl', role: 'admin', user_id: 'grpcurl' } },
    });
    expect((agents.data as Array<Record<string, unknown>>).map((agent) => agent.agentId)).toEqual(['helper']);

    // The audit trail is a projection of the events: the agent's configuration arrives shortly.
    await eventually(async () => {
      const trail = await call(address.audit, 'keel.audit.v1.AuditService/ListAuditEntries', {
        tenant_id: tenantId,
      });
      expect(
        (trail.data as Array<Record<string, unknown>> | undefined)?.map((entry) => entry.type),
      ).toContain('AgentConfigured');
    });
    const usage = await call(address.audit, 'keel.usage.v1.UsageService/GetUsage', {
      tenant_id: tenantId,
      from: today(),
      to: today(),
    });
    expect(usage).toHaveProperty('totals');

    const price = await call(address.pricing, 'keel.pricing.v1.PricingService/GetPrice', {
      model: 'openai:gpt-4o',
    });
    expect(price.price).toMatchObject({ model: 'openai:gpt-4o', outputUsdPerMtok: expect.any(Number) });
  });
});
