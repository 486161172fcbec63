import type { EventData } from '@keel/core';

/** Category of a tenant's defaults stream: `tenantdefaults-<tenantId>` (API.md `PUT /v1/defaults`). */
export const TENANT_DEFAULTS_CATEGORY = 'tenantdefaults';

/** A tenant's defaults: what an agent without that field uses; an absent field was never set. */
export interface TenantDefaults {
  /** `provider:model`. */
  model?: string;
  temperature?: number;
  maxSteps?: number;
}

/** Defaults were set; the fields given replace the stored ones, the others stay. */
export type DefaultsConfigured = EventData<'DefaultsConfigured', { defaults: TenantDefaults; at: string }>;

/** Every event of a tenant defaults stream. */
export type TenantDefaultsEvent = DefaultsConfigured;
