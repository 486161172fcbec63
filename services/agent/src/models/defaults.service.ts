import type { CommandHandler, EventStore } from '@keel/core';
import { streamName } from '@keel/core';
import type { TenantDefaults, TenantDefaultsEvent } from '@keel/events';
import { TENANT_DEFAULTS_CATEGORY } from '@keel/events';
import type { CallContext } from '../call-context.js';
import { eventMetadata } from '../call-context.js';
import type { StreamWatch } from '../store/caching-command-handler.js';
import { CachingCommandHandler } from '../store/caching-command-handler.js';
import type { PutDefaults } from './defaults.decider.js';
import { defaultsDecider } from './defaults.decider.js';

/** A tenant's defaults (`tenantdefaults-<tenantId>`): what an agent without that field uses. */
export class DefaultsService {
  private readonly handler: CommandHandler<TenantDefaults, PutDefaults, TenantDefaultsEvent>;

  /**
   * With `watched` (the process's WatchedStreams), a load reads nothing while the bus tells of no
   * newer event: defaults put through another agent process apply once their event arrives on
   * the bus (a millisecond or two after the commit), not to the very next message.
   */
  constructor(store: EventStore, watched?: StreamWatch) {
    // Last writer wins, as every configuration write.
    this.handler = new CachingCommandHandler(store, defaultsDecider, {
      maxRetries: 10,
      ...(watched ? { watched } : {}),
    });
  }

  /** Sets the fields given; a bad one is refused naming it, nothing written. */
  async put(ctx: CallContext, defaults: TenantDefaults, at: string): Promise<TenantDefaults> {
    const stream = streamName(TENANT_DEFAULTS_CATEGORY, ctx.tenantId);
    const result = await this.handler.handle(
      ctx.tenantId,
      stream,
      { type: 'PutDefaults', defaults, at },
      { metadata: eventMetadata(ctx) },
    );
    return result.state;
  }

  async load(tenantId: string): Promise<TenantDefaults> {
    return (await this.handler.load(tenantId, streamName(TENANT_DEFAULTS_CATEGORY, tenantId))).state;
  }
}
