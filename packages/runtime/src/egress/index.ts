// The egress policy without I/O (`@keel/runtime/egress`), for deciders; the guarded fetch that
// applies it at call time is exported by `@keel/runtime`.
export type { Cidr, IpAddress } from './ip-address.js';
export { cidrContains, formatIp, parseCidr, parseIp } from './ip-address.js';
export type { EgressVerdict, RefusalReason } from './egress-policy.js';
export {
  DEV_EGRESS_ALLOW,
  EgressAllowListError,
  EgressPolicy,
  parseAllowList,
  refusalOf,
} from './egress-policy.js';
