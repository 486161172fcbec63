// Two agent instances' tenant configuration and defaults on real MongoDB and NATS (each with its
// own infrastructure, as two processes would have): a message's loads read nothing while the
// bus's watch vouches for what the instance remembers, and a change made through one instance is
// used by the other once its event arrives on the bus, without anyone reading for it.
import type { Infrastructure } from '@keel/runtime';
import { createInfrastructure, createLogger, loadConfig } from '@keel/runtime';
import { mongoUrlFor, testInfra, uniqueName } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CallContext } from '../call-context.js';
import { DefaultsService } from '../models/defaults.service.js';
import { TenantConfigService } from './tenant-config.service.js';

const silent = createLogger('agent', { level: 'silent' });
const ctx: CallContext = { tenantId: 'acme', keyId: 'k1', role: 'admin', userId: 'ana', correlationId: 'r1' };
const agent = (instructions: string) => ({
  agentId: 'support',
  model: 'openai:gpt-test',
  instructions,
  tools: [],
  maxSteps: 2,
  temperature: 0,
  toolResultMaxChars: 2_000,
});

interface Instance {
  infra: Infrastructure;
  config: TenantConfigService;
  defaults: DefaultsService;
}

const instances: Instance[] = [];

beforeAll(async () => {
  const { natsUrl, mongoUrl } = testInfra();
  const env = {
    MONGODB_URL: mongoUrlFor(uniqueName('tenant_config_watched'), mongoUrl),
    NATS_URL: natsUrl,
    KEEL_NATS_STREAM: uniqueName('CONFIGWATCH'),
    KEEL_SUBJECT_PREFIX: `test.${uniqueName('configwatch')}`,
    LOG_LEVEL: 'silent',
  };
  for (let i = 0; i < 2; i++) {
    const infra = await createInfrastructure(loadConfig('agent', env), silent);
    instances.push({
      infra,
      config: new TenantConfigService(infra.store, undefined, infra.watched),
      defaults: new DefaultsService(infra.store, infra.watched),
    });
  }
});

afterAll(async () => {
  for (const { infra } of instances) await infra.close();
});

describe('tenant configuration and defaults on two agent instances', () => {
  it('loads read nothing while the watch vouches; a change through one instance is used by the other once its event arrives', async () => {
    const [a, b] = instances as [Instance, Instance];
    await a.config.apply(ctx, { type: 'PutAgent', agent: agent('v1'), at: 'now' });
    await a.defaults.put(ctx, { temperature: 0.5 }, 'now');
    expect((await b.config.load('acme')).agents['support']?.instructions).toBe('v1');
    expect((await b.defaults.load('acme')).temperature).toBe(0.5);

    const readsOfB = vi.spyOn(b.infra.store, 'read');
    for (let i = 0; i < 20; i++) {
      expect((await b.config.load('acme')).agents['support']?.instructions).toBe('v1');
      expect((await b.defaults.load('acme')).temperature).toBe(0.5);
    }
    expect(readsOfB).not.toHaveBeenCalled();

    await a.config.apply(ctx, { type: 'PutAgent', agent: agent('v2'), at: 'now' });
    await a.defaults.put(ctx, { temperature: 0.25 }, 'now');
    // Seen on the other instance as soon as the events are on the bus (not by waiting out a max age).
    await expect
      .poll(async () => (await b.config.load('acme')).agents['support']?.instructions, {
        timeout: 500,
        interval: 5,
      })
      .toBe('v2');
    await expect
      .poll(async () => (await b.defaults.load('acme')).temperature, { timeout: 500, interval: 5 })
      .toBe(0.25);
    // The writer folded its own commit: used there at once.
    expect((await a.config.load('acme')).agents['support']?.instructions).toBe('v2');
    readsOfB.mockRestore();
  });
});
