import type { EventMetadata, EventStore } from '@keel/core';
import { AlreadyExistsError, CommandHandler, NotFoundError, foldRecorded } from '@keel/core';
import type {
  AgentClient,
  CallContext,
  TenantRegistry,
  TenantRegistryCommand,
  TenantRegistryEvent,
} from '@keel/gateway';
import {
  hashApiKey,
  PLATFORM_TENANT_ID,
  registeredTenant,
  TENANT_REGISTRY_SNAPSHOT,
  TENANT_REGISTRY_STREAM,
  tenantRegistryDecider,
} from '@keel/gateway';
import type { Agent } from '@keel/proto/keel/agent/v1/agent';

/** The dev tenant's fixed id: a restart on a persisted store finds it instead of making another. */
export const DEV_TENANT_ID = 'tn_dev';

/** The demo agent's id in the dev tenant. */
export const DEV_AGENT_ID = 'demo';

/** The built-in tools the demo agent may call. */
export const DEV_AGENT_TOOLS = ['current_time', 'calculator'];

/** What the dev setup found or made. */
export interface DevSetup {
  tenantId: string;
  keyId: string;
  agentId: string;
  model: string;
  /** What this start created; empty on a restart that found everything. */
  created: Array<'tenant' | 'key' | 'agent'>;
}

const metadata: EventMetadata = {
  correlationId: 'dev-setup',
  actor: { keyId: 'operator', role: 'operator', userId: 'dev-setup' },
};

/**
 * Makes sure the dev tenant, its admin key (by hash: the key itself is never stored) and the demo
 * agent exist, through the tenant registry's decider and the agent's `PutAgent`, the same paths
 * the operator and admin routes take. Idempotent: fixed ids, so a second start (or a second
 * process racing it) finds them; the agent is put only when missing or on another model.
 */
export async function ensureDevSetup(options: {
  store: EventStore;
  agent: AgentClient;
  key: string;
  model: string;
}): Promise<DevSetup> {
  const { store, agent, key, model } = options;
  const created: DevSetup['created'] = [];
  const registry = new CommandHandler<TenantRegistry, TenantRegistryCommand, TenantRegistryEvent>(
    store,
    tenantRegistryDecider,
    { snapshot: { name: TENANT_REGISTRY_SNAPSHOT, every: 100 }, maxRetries: 10 },
  );
  const run = async (command: TenantRegistryCommand): Promise<boolean> => {
    try {
      await registry.handle(PLATFORM_TENANT_ID, TENANT_REGISTRY_STREAM, command, { metadata });
      return true;
    } catch (error) {
      if (error instanceof AlreadyExistsError) return false;
      throw error;
    }
  };

  const at = new Date().toISOString();
  if (await run({ type: 'CreateTenant', tenantId: DEV_TENANT_ID, name: 'dev', at })) created.push('tenant');

  const keyHash = hashApiKey(key);
  const tenant = registeredTenant(await registryState(store), DEV_TENANT_ID);
  const existing = Object.values(tenant?.keys ?? {}).find((entry) => entry.keyHash === keyHash);
  let keyId = existing?.keyId ?? `key_dev_${keyHash.slice(0, 16)}`;
  if (existing?.revoked) keyId = `key_dev_${keyHash.slice(0, 16)}_${Date.now()}`;
  if (!existing || existing.revoked) {
    if (
      await run({ type: 'IssueKey', tenantId: DEV_TENANT_ID, keyId, role: 'admin', name: 'dev', keyHash, at })
    ) {
      created.push('key');
    }
  }

  const context: CallContext = {
    tenantId: DEV_TENANT_ID,
    actor: { keyId, role: 'admin', userId: 'dev-setup' },
    correlationId: 'dev-setup',
  };
  const current = await agent
    .call('getAgent', context, { agentId: DEV_AGENT_ID })
    .then((response) => response.agent)
    .catch((error: unknown) => {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    });
  if (current?.model !== model) {
    const demo: Partial<Agent> = {
      agentId: DEV_AGENT_ID,
      model,
      instructions: 'You are the Keel dev demo agent. Use your tools for the time and for arithmetic.',
      tools: current?.tools ?? DEV_AGENT_TOOLS,
      maxSteps: 8,
      temperature: 0,
    };
    await agent.call('putAgent', context, { agent: { ...current, ...demo } });
    created.push('agent');
  }
  return { tenantId: DEV_TENANT_ID, keyId, agentId: DEV_AGENT_ID, model, created };
}

/** The tenant registry folded from its stream (the dev setup runs once: no snapshot needed). */
const registryState = async (store: EventStore): Promise<TenantRegistry> => {
  const events = await store.read(PLATFORM_TENANT_ID, TENANT_REGISTRY_STREAM);
  return foldRecorded(tenantRegistryDecider, events);
};
