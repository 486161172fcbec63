import { EgressAllowListError, parseAllowList } from '../egress/egress-policy.js';

/** What kind of value an environment variable holds; each kind parses and checks its text. */
export type EnvKind =
  | { type: 'port' }
  | { type: 'integer'; min: number; max: number; unit: string }
  | { type: 'number'; min: number; max: number; unit: string }
  | { type: 'url'; schemes: readonly string[]; list?: boolean }
  | { type: 'address'; list?: boolean }
  | { type: 'host' }
  | { type: 'enum'; values: readonly string[] }
  | { type: 'pattern'; pattern: RegExp; what: string }
  | { type: 'base64-bytes'; bytes: number }
  | { type: 'secret'; minLength: number }
  | { type: 'cidr-list' };

/** A parsed value: numbers for the numeric kinds, the trimmed text otherwise. */
export type EnvValue = string | number;

/** A value that does not fit its kind: `problem` completes "<NAME> …". */
export class EnvValueProblem extends Error {}

const HOST = /^[A-Za-z0-9._:[\]-]+$/;

/** Parses `raw` (already trimmed, not blank) as `kind`, or throws an `EnvValueProblem`. */
export const parseEnvValue = (kind: EnvKind, raw: string): EnvValue => {
  // Secrets and URLs (which may hold a password) are never echoed back.
  const shown = JSON.stringify(raw);
  switch (kind.type) {
    case 'port':
      return parseEnvValue({ type: 'integer', min: 1, max: 65535, unit: 'a port number' }, raw);
    case 'integer': {
      const value = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
      if (!Number.isSafeInteger(value) || value < kind.min || value > kind.max)
        throw new EnvValueProblem(`must be ${kind.unit} from ${kind.min} to ${kind.max}, got ${shown}`);
      return value;
    }
    case 'number': {
      const value = /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : Number.NaN;
      if (!Number.isFinite(value) || value < kind.min || value > kind.max)
        throw new EnvValueProblem(`must be ${kind.unit} from ${kind.min} to ${kind.max}, got ${shown}`);
      return value;
    }
    case 'url': {
      const parts = kind.list ? raw.split(',').map((part) => part.trim()) : [raw];
      for (const part of parts) {
        const scheme = /^([a-z][a-z0-9+.-]*):\/\/[^\s/?#]+/i.exec(part)?.[1]?.toLowerCase();
        if (scheme === undefined || !kind.schemes.includes(scheme))
          throw new EnvValueProblem(
            `must be a URL starting with ${kind.schemes.map((s) => `${s}://`).join(' or ')}`,
          );
      }
      return raw;
    }
    case 'address': {
      // A list (gRPC over several instances): comma-separated entries, each host:port or dns:///host:port.
      const parts = kind.list ? raw.split(',').map((part) => part.trim().replace(/^dns:\/\/\//, '')) : [raw];
      for (const part of parts) {
        const port = /:(\d+)$/.exec(part)?.[1];
        if (!HOST.test(part) || port === undefined || Number(port) < 1 || Number(port) > 65535)
          throw new EnvValueProblem(
            kind.list
              ? `must be host:port, dns:///host:port, or a comma-separated list of them, got ${shown}`
              : `must be host:port, got ${shown}`,
          );
      }
      return raw;
    }
    case 'host':
      if (!HOST.test(raw)) throw new EnvValueProblem(`must be a host name or IP address, got ${shown}`);
      return raw;
    case 'enum': {
      const value = raw.toLowerCase();
      if (!kind.values.includes(value))
        throw new EnvValueProblem(`must be one of ${kind.values.join(', ')}, got ${shown}`);
      return value;
    }
    case 'pattern':
      if (!kind.pattern.test(raw)) throw new EnvValueProblem(`must be ${kind.what}, got ${shown}`);
      return raw;
    case 'base64-bytes': {
      const valid = /^[A-Za-z0-9+/]+={0,2}$/.test(raw) && Buffer.from(raw, 'base64').length === kind.bytes;
      if (!valid)
        throw new EnvValueProblem(
          `must be ${kind.bytes} random bytes in base64 (openssl rand -base64 ${kind.bytes})`,
        );
      return raw;
    }
    case 'secret':
      if (raw.length < kind.minLength)
        throw new EnvValueProblem(`must be at least ${kind.minLength} characters long`);
      return raw;
    case 'cidr-list':
      try {
        parseAllowList(raw);
      } catch (error) {
        if (error instanceof EgressAllowListError) throw new EnvValueProblem(error.message);
        throw error;
      }
      return raw;
    default: {
      const unknown: never = kind;
      throw new EnvValueProblem(`has an unknown kind ${JSON.stringify(unknown)}`);
    }
  }
};
