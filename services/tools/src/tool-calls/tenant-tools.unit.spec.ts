import type { ReadStreamOptions } from '@keel/core';
import { InMemoryEventBus, InMemoryEventStore, WatchedStreams } from '@keel/core';
import type { SealedSecret, ToolDefinition } from '@keel/events';
import { describe, expect, it } from 'vitest';
import { TenantToolsCache, emptyTenantTools, resolveTool } from './tenant-tools.js';

const sealed = (data: string): SealedSecret => ({ v: 1, iv: 'iv', tag: 'tag', data });

const tool = (name: string, overrides: Partial<ToolDefinition> = {}): ToolDefinition => ({
  name,
  description: name,
  inputSchema: { type: 'object' },
  kind: 'webhook',
  url: `https://hooks.example/${name}`,
  approval: 'never',
  roles: [],
  phases: [],
  timeoutMs: 5_000,
  ...overrides,
});

const config = (store: InMemoryEventStore, tenantId: string, events: { type: string; data: unknown }[]) =>
  store.append(tenantId, `tenantconfig-${tenantId}`, events);

describe('tenant tools', () => {
  it('folds the latest definition of each tool and the latest webhook secret', async () => {
    const store = new InMemoryEventStore();
    await config(store, 'acme', [
      { type: 'ToolConfigured', data: { tool: tool('lookup'), at: 'now' } },
      { type: 'WebhookSecretRotated', data: { secret: sealed('first'), at: 'now' } },
      { type: 'AgentConfigured', data: { agent: { agentId: 'a' }, at: 'now' } },
      { type: 'ToolConfigured', data: { tool: tool('lookup', { approval: 'always' }), at: 'now' } },
      { type: 'WebhookSecretRotated', data: { secret: sealed('second'), at: 'now' } },
    ]);
    const tenant = await new TenantToolsCache(store).get('acme');
    expect(tenant.version).toBe(5);
    expect(resolveTool('lookup', tenant)).toEqual({
      kind: 'webhook',
      definition: {
        name: 'lookup',
        kind: 'webhook',
        inputSchema: { type: 'object' },
        url: 'https://hooks.example/lookup',
        timeoutMs: 5_000,
        approval: 'always',
      },
      webhookSecret: sealed('second'),
    });
  });

  it('resolves built-ins by their reserved names, and nothing for an unknown name', () => {
    expect(resolveTool('calculator', emptyTenantTools())).toMatchObject({
      kind: 'builtin',
      definition: { name: 'calculator', kind: 'builtin', approval: 'never' },
    });
    expect(resolveTool('lookup', emptyTenantTools())).toBeUndefined();
    expect(resolveTool('toString', emptyTenantTools())).toBeUndefined();
  });

  it('reads only the events after the cached version, and sees a change at the next lookup', async () => {
    const store = new InMemoryEventStore();
    const reads: (ReadStreamOptions | undefined)[] = [];
    const read = store.read.bind(store);
    store.read = (tenantId, stream, options) => {
      reads.push(options);
      return read(tenantId, stream, options);
    };
    const cache = new TenantToolsCache(store);
    await config(store, 'acme', [{ type: 'ToolConfigured', data: { tool: tool('lookup'), at: 'now' } }]);
    expect(resolveTool('lookup', await cache.get('acme'))?.definition.approval).toBe('never');
    await cache.get('acme');
    await config(store, 'acme', [
      { type: 'ToolConfigured', data: { tool: tool('lookup', { approval: 'always' }), at: 'now' } },
    ]);
    expect(resolveTool('lookup', await cache.get('acme'))?.definition.approval).toBe('always');
    expect(reads).toEqual([{ fromVersion: 1 }, { fromVersion: 2 }, { fromVersion: 2 }]);
  });

  it('with a watched stream, reads nothing while the bus tells of no change, and reads again once it does', async () => {
    const store = new InMemoryEventStore();
    const bus = new InMemoryEventBus({ logger: { warn: () => {}, error: () => {} } });
    const reads: (ReadStreamOptions | undefined)[] = [];
    const read = store.read.bind(store);
    store.read = (tenantId, stream, options) => {
      reads.push(options);
      return read(tenantId, stream, options);
    };
    const cache = new TenantToolsCache(store, { watched: new WatchedStreams(bus) });
    await config(store, 'acme', [{ type: 'ToolConfigured', data: { tool: tool('lookup'), at: 'now' } }]);
    const [first, second] = await Promise.all([cache.get('acme'), cache.get('acme')]);
    expect(second).toBe(first);
    await cache.get('acme');
    await cache.get('acme');
    expect(reads).toEqual([{ fromVersion: 1 }]);
    // Another instance changes the tool; its commit reaches this process on the bus.
    const changed = await config(store, 'acme', [
      { type: 'ToolConfigured', data: { tool: tool('lookup', { approval: 'always' }), at: 'now' } },
    ]);
    await bus.publish(changed.events);
    expect(resolveTool('lookup', await cache.get('acme'))?.definition.approval).toBe('always');
    await cache.get('acme');
    expect(reads).toEqual([{ fromVersion: 1 }, { fromVersion: 2 }]);
    await bus.close();
  });

  it('keeps tenants apart', async () => {
    const store = new InMemoryEventStore();
    await config(store, 'acme', [{ type: 'ToolConfigured', data: { tool: tool('lookup'), at: 'now' } }]);
    const cache = new TenantToolsCache(store, { maxTenants: 1 });
    expect(resolveTool('lookup', await cache.get('acme'))).toBeDefined();
    expect(resolveTool('lookup', await cache.get('globex'))).toBeUndefined();
    expect(resolveTool('lookup', await cache.get('acme'))).toBeDefined();
  });
});
