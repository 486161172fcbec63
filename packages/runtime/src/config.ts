import { ConfigError } from './config-error.js';
import { checkEnv } from './env/env-check.js';

/** The five Keel services; each is a process of its own, or one of five in the dev mode. */
export const SERVICE_NAMES = ['gateway', 'agent', 'tools', 'audit', 'pricing'] as const;

/** One of the five Keel services. */
export type ServiceName = (typeof SERVICE_NAMES)[number];

/** The gRPC port of each service when neither `<SERVICE>_GRPC_PORT` nor `GRPC_PORT` is set. */
export const DEFAULT_GRPC_PORTS: Readonly<Record<ServiceName, number>> = {
  gateway: 50051,
  agent: 50052,
  tools: 50053,
  audit: 50054,
  pricing: 50055,
};

/** pino's levels, plus `silent`. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** A pino log level. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** A service's settings, read once from the environment and checked, so a typo fails at start. */
export interface KeelConfig {
  service: ServiceName;
  /** MongoDB connection string with the database name; undefined: the in-memory store. */
  mongodbUrl: string | undefined;
  /** NATS server URL(s), comma-separated; undefined: the in-process bus. */
  natsUrl: string | undefined;
  grpcHost: string;
  grpcPort: number;
  /** The variable that chose `grpcPort` (`<SERVICE>_GRPC_PORT` or `GRPC_PORT`), for messages about it. */
  grpcPortVariable: string;
  /** Gateway HTTP port. */
  httpPort: number;
  /** Gateway HTTP host (`HOST`, default 0.0.0.0). */
  httpHost: string;
  logLevel: LogLevel;
  natsStream: string;
  subjectPrefix: string;
  shutdownTimeoutMs: number;
  /** `METRICS_PORT`: serve `GET /metrics` on this port (on `grpcHost`); undefined: no metrics port. */
  metricsPort: number | undefined;
  /** The outbox relay's lease window (`KEEL_OUTBOX_LEASE_MS`): how long a dead relay blocks the next. */
  outboxLeaseMs: number;
}

export { ConfigError } from './config-error.js';

type Env = Readonly<Record<string, string | undefined>>;

const STREAM_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const SUBJECT_PREFIX = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
const HOST = /^[A-Za-z0-9._:[\]-]+$/;

/** An unset or blank variable is absent. */
const read = (env: Env, name: string): string | undefined => {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
};

const integer = (
  env: Env,
  name: string,
  min: number,
  max: number,
  fallback: number,
  what: string,
): number => {
  const raw = read(env, name);
  if (raw === undefined) return fallback;
  const value = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(name, `must be ${what} from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  return value;
};

const port = (env: Env, name: string, fallback: number): number =>
  integer(env, name, 1, 65535, fallback, 'a port number');

/** Checks a URL's scheme without ever echoing the URL: it may hold a password. */
const url = (env: Env, name: string, schemes: readonly string[], list: boolean): string | undefined => {
  const raw = read(env, name);
  if (raw === undefined) return undefined;
  const parts = list ? raw.split(',').map((part) => part.trim()) : [raw];
  for (const part of parts) {
    const scheme = /^([a-z][a-z0-9+.-]*):\/\/[^\s/?#]+/i.exec(part)?.[1]?.toLowerCase();
    if (scheme === undefined || !schemes.includes(scheme)) {
      throw new ConfigError(
        name,
        `must be a URL starting with ${schemes.map((s) => `${s}://`).join(' or ')}`,
      );
    }
  }
  return raw;
};

const matching = (env: Env, name: string, pattern: RegExp, fallback: string, what: string): string => {
  const raw = read(env, name);
  if (raw === undefined) return fallback;
  if (!pattern.test(raw)) throw new ConfigError(name, `must be ${what}, got ${JSON.stringify(raw)}`);
  return raw;
};

/**
 * Reads and checks a service's configuration. The gRPC port is `<SERVICE>_GRPC_PORT` (so one
 * process can run all five apart), else `GRPC_PORT`, else the service's default.
 */
export function loadConfig(service: ServiceName, env: Env = process.env): KeelConfig {
  if (!SERVICE_NAMES.includes(service))
    throw new ConfigError('service', `must be one of ${SERVICE_NAMES.join(', ')}`);
  // Every variable of every service, and no unknown KEEL_* name (see env/env-vars.ts).
  checkEnv(env);
  const specificPort = `${service.toUpperCase()}_GRPC_PORT`;
  // Unset, the gateway's port is still GRPC_PORT's to move; another service's, its own variable's.
  const grpcPortVariable =
    read(env, specificPort) !== undefined
      ? specificPort
      : read(env, 'GRPC_PORT') !== undefined || service === 'gateway'
        ? 'GRPC_PORT'
        : specificPort;
  const grpcPort = port(env, grpcPortVariable, DEFAULT_GRPC_PORTS[service]);
  const logLevel = (read(env, 'LOG_LEVEL')?.toLowerCase() ?? 'info') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(
      'LOG_LEVEL',
      `must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(env.LOG_LEVEL)}`,
    );
  }
  return {
    service,
    mongodbUrl: url(env, 'MONGODB_URL', ['mongodb', 'mongodb+srv'], false),
    natsUrl: url(env, 'NATS_URL', ['nats', 'tls', 'ws', 'wss'], true),
    grpcHost: matching(env, 'GRPC_HOST', HOST, '127.0.0.1', 'a host name or IP address'),
    grpcPort,
    grpcPortVariable,
    httpPort: port(env, 'PORT', 8080),
    httpHost: matching(env, 'HOST', HOST, '0.0.0.0', 'a host name or IP address'),
    logLevel,
    natsStream: matching(env, 'KEEL_NATS_STREAM', STREAM_NAME, 'KEEL_EVENTS', '1-64 letters, digits, _ or -'),
    subjectPrefix: matching(
      env,
      'KEEL_SUBJECT_PREFIX',
      SUBJECT_PREFIX,
      'keel.events',
      'dot-separated tokens of letters, digits, _ or - (no wildcards)',
    ),
    shutdownTimeoutMs: integer(env, 'SHUTDOWN_TIMEOUT_MS', 100, 600_000, 10_000, 'a number of milliseconds'),
    metricsPort: read(env, 'METRICS_PORT') === undefined ? undefined : port(env, 'METRICS_PORT', 0),
    outboxLeaseMs: integer(env, 'KEEL_OUTBOX_LEASE_MS', 500, 600_000, 10_000, 'a number of milliseconds'),
  };
}

/** `host:port` for a gRPC server or client; IPv6 literals get brackets. */
export const grpcAddress = (config: Pick<KeelConfig, 'grpcHost' | 'grpcPort'>): string =>
  config.grpcHost.includes(':') && !config.grpcHost.startsWith('[')
    ? `[${config.grpcHost}]:${config.grpcPort}`
    : `${config.grpcHost}:${config.grpcPort}`;
