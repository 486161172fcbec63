// The platform behind the public API for end-to-end tests: an agent, a tools service, one or more
// gateway processes (and, when asked, the pricing service) on one environment, the fake OpenAI
// server as the model and the webhook server as the tool. Plus the set-up most API tests share:
// a tenant with keys, and a `support` agent with a `refund` webhook tool that needs approval.
import type { FakeOpenAI } from '@keel/testkit';
import { freePort, startFakeOpenAI, uniqueName } from '@keel/testkit';
import { expect } from 'vitest';
import { gatewayRequest, jsonOf } from './http.js';
import { platformEnv, startAgent, startGateway, startPricing, startTools } from './platform.js';
import type { WebhookServer } from './webhook-server.js';
import { startWebhookServer } from './webhook-server.js';

/** What to start besides the agent, the tools service and a gateway. */
export interface GatewayPlatformOptions {
  /** Extra environment for every process. */
  env?: Record<string, string>;
  /** The gateway processes' names, one gateway each (default: one, `gateway`). */
  gateways?: string[];
  /** Extra environment for the gateways only. */
  gatewayEnv?: Record<string, string>;
  /** Extra environment for the agent only. */
  agentEnv?: Record<string, string>;
  /** Starts the pricing service too, its address given (PRICING_GRPC_URL) to the processes named here. */
  pricingFor?: Array<'agent' | 'gateway'>;
}

/** One gateway process: its HTTP base URL and its gRPC address. */
export interface GatewayAddress {
  name: string;
  base: string;
  grpcAddress: string;
}

/**
 * The durable events, in order, of a turn whose model asks for one tool call that needs approval
 * and, once it is approved and run, answers (as the `support` agent's refund turns do).
 */
export const APPROVED_TOOL_TURN: readonly string[] = [
  'turn.started',
  'message.completed',
  'usage',
  'tool.call',
  'approval.required',
  'approval.decided',
  'tool.result',
  'message.completed',
  'usage',
  'turn.completed',
];

/** A role a tenant key is issued with. */
export type KeyRole = 'admin' | 'editor' | 'viewer';

/**
 * Starts the processes (all of them, or none: one that fails to start stops the others). The
 * operator key is `operatorKey`; `stop` ends everything.
 */
export const startGatewayPlatform = async (name: string, options: GatewayPlatformOptions = {}) => {
  const operatorKey = `op_${uniqueName(name)}`;
  const env = platformEnv(name, options.env);
  const fake: FakeOpenAI = await startFakeOpenAI();
  const webhook: WebhookServer = await startWebhookServer();
  const agentPort = await freePort();
  const pricingFor = options.pricingFor ?? [];
  const pricingPort = pricingFor.length > 0 ? await freePort() : undefined;
  const pricingEnv = (who: 'agent' | 'gateway'): Record<string, string> =>
    pricingPort !== undefined && pricingFor.includes(who)
      ? { PRICING_GRPC_URL: `127.0.0.1:${pricingPort}` }
      : {};
  const gateways: Array<GatewayAddress & { port: number; grpcPort: number }> = [];
  for (const gatewayName of options.gateways ?? ['gateway']) {
    const [port, grpcPort] = [await freePort(), await freePort()];
    gateways.push({
      name: gatewayName,
      port,
      grpcPort,
      base: `http://127.0.0.1:${port}`,
      grpcAddress: `127.0.0.1:${grpcPort}`,
    });
  }
  const started = await Promise.allSettled([
    startAgent({ ...env, ...options.agentEnv, ...pricingEnv('agent') }, agentPort, fake.url),
    startTools(env),
    ...(pricingPort === undefined ? [] : [startPricing(env, pricingPort)]),
    ...gateways.map((gateway) =>
      startGateway(env, { port: gateway.port, grpcPort: gateway.grpcPort, agentPort }, operatorKey, {
        name: gateway.name,
        extra: { ...options.gatewayEnv, ...pricingEnv('gateway') },
      }),
    ),
  ]);
  const processes = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const stop = async () => {
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await fake.close();
    await webhook.close();
  };
  const failed = started.find((s) => s.status === 'rejected');
  if (failed) {
    await stop();
    throw failed.reason;
  }

  const base = gateways[0]!.base;
  /** An HTTP call on the first gateway. */
  const request = (
    method: string,
    path: string,
    key: string | undefined,
    body?: unknown,
    headers: Record<string, string> = {},
  ) => gatewayRequest(base, method, path, key, body, headers);

  /** Creates tenant `tenantName` with one key per role; its id and keys. */
  const tenantWithKeys = async <R extends KeyRole>(tenantName: string, roles: readonly R[]) => {
    const created = await request('POST', '/v1/tenants', operatorKey, { name: tenantName });
    expect(created.status).toBe(201);
    const id = (await jsonOf(created)).id as string;
    const keys = {} as Record<R, string>;
    for (const role of roles) {
      keys[role] = (await jsonOf(await request('POST', `/v1/tenants/${id}/keys`, operatorKey, { role })))
        .key as string;
    }
    return { id, keys };
  };

  /**
   * Configures the tenant of `adminKey`: the webhook server's secret, a `refund` webhook tool that
   * always needs approval, a `support` agent using it, and the fake server as the OpenAI provider.
   */
  const configureSupportAgent = async (adminKey: string) => {
    const secret = await request('POST', '/v1/webhook-secret', adminKey);
    webhook.setSecret((await jsonOf(secret)).secret as string);
    const tool = await request('PUT', '/v1/tools/refund', adminKey, {
      description: 'Refund an order',
      inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      kind: 'webhook',
      url: webhook.url,
      approval: 'always',
      timeoutMs: 10_000,
    });
    expect(tool.status).toBe(200);
    const agent = await request('PUT', '/v1/agents/support', adminKey, {
      model: 'openai:gpt-4o-mini',
      tools: ['refund'],
      maxSteps: 4,
    });
    expect(agent.status).toBe(200);
    // A tenant endpoint comes with the tenant's own key (the platform key never goes there).
    const provider = await request('PUT', '/v1/providers/openai', adminKey, {
      baseUrl: fake.url,
      apiKey: 'sk-tenant-e2e',
    });
    expect(provider.status).toBe(200);
  };

  /** Kills the agent process with `signal` and starts a new one on the same port and environment. */
  const restartAgent = async (signal: 'SIGKILL' | 'SIGTERM' = 'SIGKILL') => {
    const agent = processes[0]!;
    await agent.kill(signal);
    processes[0] = await startAgent(
      { ...env, ...options.agentEnv, ...pricingEnv('agent') },
      agentPort,
      fake.url,
    );
  };

  return {
    operatorKey,
    env,
    fake,
    webhook,
    gateways: gateways.map(({ name: gatewayName, base, grpcAddress }) => ({
      name: gatewayName,
      base,
      grpcAddress,
    })),
    /** The first gateway's base URL and gRPC address. */
    base,
    grpcAddress: gateways[0]!.grpcAddress,
    /** The pricing service's own gRPC address (when started). */
    pricingAddress: pricingPort === undefined ? undefined : `127.0.0.1:${pricingPort}`,
    processes,
    request,
    tenantWithKeys,
    configureSupportAgent,
    restartAgent,
    stop,
  };
};

/** A running gateway platform and its helpers. */
export type GatewayPlatform = Awaited<ReturnType<typeof startGatewayPlatform>>;
