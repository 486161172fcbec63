import type { EventStore, CommandHandler } from '@keel/core';
import { streamName } from '@keel/core';
import type { TenantConfigEvent } from '@keel/events';
import { TENANT_CONFIG_CATEGORY } from '@keel/events';
import { EgressPolicy } from '@keel/runtime/egress';
import type { TenantConfig, TenantConfigCommand } from './tenant-config.decider.js';
import { createTenantConfigDecider } from './tenant-config.decider.js';
import type { StreamWatch } from '../store/caching-command-handler.js';
import { CachingCommandHandler } from '../store/caching-command-handler.js';
import type { CallContext } from '../call-context.js';
import { eventMetadata } from '../call-context.js';

/** A tenant's configuration: agents, tools, providers, webhook secret (secrets stay sealed). */
export class TenantConfigService {
  private readonly handler: CommandHandler<TenantConfig, TenantConfigCommand, TenantConfigEvent>;

  /**
   * `egress` judges the URLs tenants aim (KEEL_EGRESS_ALLOW); default: no range opened. With
   * `watched` (the process's WatchedStreams), a load reads nothing while the bus tells of no newer
   * event: a change made through another agent process is used once its event arrives on the bus
   * (a millisecond or two after its commit), not by the very next message. A change made through
   * this process is used at once (its own append updates what it remembers).
   */
  constructor(store: EventStore, egress: EgressPolicy = new EgressPolicy(), watched?: StreamWatch) {
    // Remembers the tenants' configurations: a load reads only the newer events, or none.
    this.handler = new CachingCommandHandler(store, createTenantConfigDecider(egress), {
      ...(watched ? { watched } : {}),
      // v3: the state holds `mcpServers` (v2: `teams`; an older snapshot has neither).
      snapshot: { name: 'tenant-config-v3', every: 20 },
      // A configuration write is last-writer-wins: concurrent PUTs of one tenant all land, in
      // some order, rather than one of them answering 409 for a race the caller cannot see.
      maxRetries: 10,
    });
  }

  /** Applies a configuration change; invalid definitions are refused naming the field. */
  async apply(ctx: CallContext, command: TenantConfigCommand): Promise<TenantConfig> {
    const result = await this.handler.handle(ctx.tenantId, this.stream(ctx.tenantId), command, {
      metadata: eventMetadata(ctx),
    });
    return result.state;
  }

  async load(tenantId: string): Promise<TenantConfig> {
    return (await this.handler.load(tenantId, this.stream(tenantId))).state;
  }

  private stream(tenantId: string): string {
    return streamName(TENANT_CONFIG_CATEGORY, tenantId);
  }
}
