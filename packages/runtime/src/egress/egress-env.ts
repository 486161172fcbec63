import { ConfigError } from '../config-error.js';
import { EgressAllowListError, EgressPolicy } from './egress-policy.js';

/**
 * The egress policy of this process: `KEEL_EGRESS_ALLOW` (comma-separated CIDRs opened on
 * purpose; unset or empty: none). A malformed list is a ConfigError naming the variable.
 */
export const egressPolicyFromEnv = (
  env: Readonly<Record<string, string | undefined>> = process.env,
): EgressPolicy => {
  try {
    return EgressPolicy.fromAllowList(env.KEEL_EGRESS_ALLOW);
  } catch (error) {
    if (error instanceof EgressAllowListError) throw new ConfigError('KEEL_EGRESS_ALLOW', error.message);
    throw error;
  }
};
