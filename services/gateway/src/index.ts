// The gateway as a composition root sees it: main.ts here, and npm start's apps/dev, which runs
// all five services in one process and seeds the dev tenant. Listed on purpose: nothing else of
// the gateway is anyone else's to import.
export { GatewayModule } from './gateway.module.js';
export { GATEWAY_GRPC_SERVICES } from './grpc/grpc-services.js';
export { defaultConsoleDir } from './console/console-assets.js';
export { createGatewayHttpAdapter } from './http/http-adapter.js';
export type { CallContext } from './agent-client/agent.client.js';
export { AgentClient } from './agent-client/agent.client.js';
export { generateApiKey, hashApiKey } from './tenants/api-keys.js';
export type { TenantRegistry, TenantRegistryCommand } from './tenants/tenant-registry.decider.js';
export {
  registeredTenant,
  TENANT_REGISTRY_SNAPSHOT,
  tenantRegistryDecider,
} from './tenants/tenant-registry.decider.js';
export type { TenantRegistryEvent } from './tenants/tenant-registry.events.js';
export { PLATFORM_TENANT_ID, TENANT_REGISTRY_STREAM } from './tenants/tenant-registry.events.js';
