import type { ServiceName } from '../config.js';
import type { EnvKind } from './env-kinds.js';

/** Who reads a variable: services, the dev mode (`npm start`) only, or every service. */
export type EnvReaders = readonly ServiceName[] | 'all' | 'dev';

/** One environment variable Keel reads: its kind, default, readers and a one-line description. */
export interface EnvVar {
  name: string;
  kind: EnvKind;
  readers: EnvReaders;
  /** The default as text (shown in `.env.example`); absent: unset means off / none / made up. */
  default?: string;
  /** One line for `.env.example` and the README. */
  doc: string;
  /** Never logged, never echoed in an error. */
  secret?: boolean;
}

const ms = (min: number, max: number): EnvKind => ({
  type: 'integer',
  min,
  max,
  unit: 'a number of milliseconds',
});
/** A service's gRPC address: host:port, dns:///host:port (every address, round-robin), or a list. */
const grpcUrl: EnvKind = { type: 'address', list: true };

/**
 * Every environment variable the services read. A `KEEL_*` name that is not here stops the start
 * (a typo must not silently fall back to a default): to add a setting, add one line here and one
 * to `.env.example` (a unit test checks both against the code).
 */
export const ENV_VARS: readonly EnvVar[] = [
  // Infrastructure (every service).
  {
    name: 'MONGODB_URL',
    kind: { type: 'url', schemes: ['mongodb', 'mongodb+srv'] },
    readers: 'all',
    doc: 'MongoDB connection string with the database name; unset: the in-memory store (dev mode only)',
    secret: true,
  },
  {
    name: 'NATS_URL',
    kind: { type: 'url', schemes: ['nats', 'tls', 'ws', 'wss'], list: true },
    readers: 'all',
    doc: 'NATS server URL(s), comma-separated; unset: the in-process bus (dev mode only)',
    secret: true,
  },
  {
    name: 'KEEL_NATS_STREAM',
    kind: { type: 'pattern', pattern: /^[A-Za-z0-9_-]{1,64}$/, what: '1-64 letters, digits, _ or -' },
    readers: 'all',
    default: 'KEEL_EVENTS',
    doc: 'the JetStream stream holding every event',
  },
  {
    name: 'KEEL_SUBJECT_PREFIX',
    kind: {
      type: 'pattern',
      pattern: /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/,
      what: 'dot-separated tokens of letters, digits, _ or - (no wildcards)',
    },
    readers: 'all',
    default: 'keel.events',
    doc: 'subject prefix: events go to <prefix>.<tenant>.<category>.<stream id>',
  },
  {
    name: 'KEEL_WATCH_MAX_AGE_MS',
    kind: ms(0, 600_000),
    readers: 'all',
    default: '5000',
    doc: 'how long a read of a watched configuration stream (tenant config, defaults, registry) vouches for the cache without reading again; changes from other processes arrive on the bus sooner. 0: read every time',
  },
  {
    name: 'KEEL_OUTBOX_LEASE_MS',
    kind: ms(500, 600_000),
    readers: 'all',
    default: '10000',
    doc: "the outbox relay's lease window: how long a dead relay blocks the next",
  },
  {
    name: 'KEEL_FAST_PATH',
    kind: { type: 'enum', values: ['on', 'off'] },
    readers: 'all',
    default: 'on',
    doc: 'publish each commit right after it is durable (the outbox relay still guarantees delivery) and wake feeds on it; off: only the relay publishes, feeds poll (to measure the difference)',
  },
  {
    name: 'LOG_LEVEL',
    kind: { type: 'enum', values: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] },
    readers: 'all',
    default: 'info',
    doc: 'pino log level',
  },
  {
    name: 'SHUTDOWN_TIMEOUT_MS',
    kind: ms(100, 600_000),
    readers: 'all',
    default: '10000',
    doc: 'how long a graceful stop may take before the process exits anyway',
  },
  {
    name: 'GRPC_HOST',
    kind: { type: 'host' },
    readers: 'all',
    default: '127.0.0.1',
    doc: 'interface the gRPC server binds (0.0.0.0 in containers)',
  },
  {
    name: 'GRPC_PORT',
    kind: { type: 'port' },
    readers: 'all',
    doc: "this service's gRPC port (default: gateway 50051, agent 50052, tools 50053, audit 50054, pricing 50055)",
  },
  {
    name: 'GATEWAY_GRPC_PORT',
    kind: { type: 'port' },
    readers: ['gateway'],
    default: '50051',
    doc: "the gateway's gRPC port, before GRPC_PORT (lets one process run all five)",
  },
  {
    name: 'AGENT_GRPC_PORT',
    kind: { type: 'port' },
    readers: ['agent'],
    default: '50052',
    doc: "the agent's gRPC port, before GRPC_PORT",
  },
  {
    name: 'TOOLS_GRPC_PORT',
    kind: { type: 'port' },
    readers: ['tools'],
    default: '50053',
    doc: "the tools service's gRPC port, before GRPC_PORT",
  },
  {
    name: 'AUDIT_GRPC_PORT',
    kind: { type: 'port' },
    readers: ['audit'],
    default: '50054',
    doc: "the audit service's gRPC port, before GRPC_PORT",
  },
  {
    name: 'PRICING_GRPC_PORT',
    kind: { type: 'port' },
    readers: ['pricing', 'agent'],
    default: '50055',
    doc: "the pricing service's gRPC port, before GRPC_PORT",
  },
  {
    name: 'METRICS_PORT',
    kind: { type: 'port' },
    readers: 'all',
    doc: "serve GET /metrics (Prometheus) on this port, on GRPC_HOST; unset: none (the gateway's /metrics on PORT shows its own; the dev mode's shows all five)",
  },
  {
    name: 'KEEL_MASTER_KEY',
    kind: { type: 'base64-bytes', bytes: 32 },
    readers: 'all',
    doc: "seals provider keys, webhook secrets and conversations' data keys (AES-256-GCM); the same on every service; unset: made up per process (npm start on MongoDB keeps it in .keel/master-key), and conversations are not sealed",
    secret: true,
  },

  // Gateway.
  {
    name: 'PORT',
    kind: { type: 'port' },
    readers: ['gateway'],
    default: '8080',
    doc: "the gateway's HTTP port",
  },
  {
    name: 'HOST',
    kind: { type: 'host' },
    readers: ['gateway'],
    default: '0.0.0.0',
    doc: "interface the gateway's HTTP server binds (npm start, the dev mode, binds 127.0.0.1 unless HOST is set)",
  },
  {
    name: 'KEEL_OPERATOR_KEY',
    kind: { type: 'secret', minLength: 12 },
    readers: ['gateway'],
    doc: 'the operator key (Bearer) for tenants and keys; unset: operator routes answer 401 (dev mode makes one up)',
    secret: true,
  },
  {
    name: 'AGENT_GRPC_URL',
    kind: grpcUrl,
    readers: ['gateway'],
    default: '127.0.0.1:50052',
    doc: "the agent's gRPC address: host:port, dns:///host:port (every instance the name resolves to, round-robin; a headless Service) or a comma-separated list; reads and Idempotency-Key writes go to another instance when one is unavailable",
  },
  {
    name: 'PRICING_GRPC_URL',
    kind: grpcUrl,
    readers: ['gateway', 'agent'],
    default: '127.0.0.1:50055',
    doc: "the pricing service's gRPC address (host:port)",
  },
  {
    name: 'AUDIT_GRPC_URL',
    kind: grpcUrl,
    readers: ['gateway'],
    default: '127.0.0.1:50054',
    doc: "the audit service's gRPC address (host:port): usage and the audit trail",
  },
  {
    name: 'KEEL_SSE_HEARTBEAT_MS',
    kind: ms(1, 600_000),
    readers: ['gateway'],
    default: '15000',
    doc: 'SSE comment heartbeat interval',
  },
  {
    name: 'KEEL_SSE_POLL_MS',
    kind: ms(1, 600_000),
    readers: ['gateway'],
    default: '250',
    doc: 'how often an open events feed polls the log when nothing woke it',
  },
  {
    name: 'KEEL_SSE_WATCHED_POLL_MS',
    kind: ms(1, 600_000),
    readers: ['gateway'],
    default: '5000',
    doc: "the same when the bus shows each commit (NATS): the safety net for a lost notice, a lost notice's longest delay",
  },
  {
    name: 'KEEL_SSE_MAX_BUFFERED_BYTES',
    kind: { type: 'integer', min: 1, max: 1024 ** 3, unit: 'a number of bytes' },
    readers: ['gateway'],
    default: '1048576',
    doc: 'a slow SSE client past this many buffered bytes loses deltas (never durable events)',
  },
  {
    name: 'KEEL_MAX_MESSAGE_CHARS',
    kind: { type: 'integer', min: 1, max: 1_000_000, unit: 'a number of characters' },
    readers: ['gateway'],
    default: '100000',
    doc: 'longest user message the gateway accepts (longer: 400 naming content)',
  },
  {
    name: 'KEEL_RATE_LIMIT_RPM',
    kind: { type: 'integer', min: 0, max: 999_999_999, unit: 'a number of requests per minute' },
    readers: ['gateway'],
    default: '600',
    doc: 'requests per minute per API key (0: off)',
  },
  {
    name: 'KEEL_TENANT_RATE_LIMIT_RPM',
    kind: { type: 'integer', min: 0, max: 999_999_999, unit: 'a number of requests per minute' },
    readers: ['gateway'],
    default: '3000',
    doc: 'requests per minute per tenant, all its keys together (0: off)',
  },
  {
    name: 'KEEL_RATE_LIMIT_BUCKET',
    kind: { type: 'pattern', pattern: /^[A-Za-z0-9_-]{1,64}$/, what: '1-64 letters, digits, _ or -' },
    readers: ['gateway'],
    doc: 'the JetStream KV bucket holding the shared rate-limit counters',
  },

  // Agent.
  {
    name: 'KEEL_AGENT_ACK_WAIT_MS',
    kind: ms(100, 3_600_000),
    readers: ['agent'],
    default: '30000',
    doc: "the turn consumer's ack wait: how soon a crashed agent's turn is redelivered",
  },
  {
    name: 'KEEL_AGENT_CONCURRENCY',
    kind: { type: 'integer', min: 1, max: 10_000, unit: 'a number of turns' },
    readers: ['agent'],
    default: '32',
    doc: 'turns one agent process runs at once',
  },
  {
    name: 'KEEL_BUDGET_TURN_RESERVE_USD',
    kind: { type: 'number', min: 0, max: 1_000_000, unit: 'an amount in USD' },
    readers: ['agent'],
    default: '0.05',
    doc: "the floor of a turn's budget reservation",
  },
  {
    name: 'KEEL_BUDGET_REFRESH_MS',
    kind: ms(0, 3_600_000),
    readers: ['agent'],
    default: '1000',
    doc: "how stale the agent's copy of the tenants' budgets may be",
  },
  {
    name: 'OPENAI_API_KEY',
    kind: { type: 'secret', minLength: 1 },
    readers: ['agent'],
    doc: 'process-wide OpenAI key for tenants without their own',
    secret: true,
  },
  {
    name: 'OPENAI_BASE_URL',
    kind: { type: 'url', schemes: ['http', 'https'] },
    readers: ['agent'],
    doc: 'process-wide OpenAI-compatible endpoint',
  },
  {
    name: 'ANTHROPIC_API_KEY',
    kind: { type: 'secret', minLength: 1 },
    readers: ['agent'],
    doc: 'process-wide Anthropic key',
    secret: true,
  },
  {
    name: 'ANTHROPIC_BASE_URL',
    kind: { type: 'url', schemes: ['http', 'https'] },
    readers: ['agent'],
    doc: 'process-wide Anthropic endpoint',
  },
  {
    name: 'GOOGLE_API_KEY',
    kind: { type: 'secret', minLength: 1 },
    readers: ['agent'],
    doc: 'process-wide Google (Gemini) key',
    secret: true,
  },
  {
    name: 'GOOGLE_BASE_URL',
    kind: { type: 'url', schemes: ['http', 'https'] },
    readers: ['agent'],
    doc: 'process-wide Google endpoint',
  },
  {
    name: 'OLLAMA_HOST',
    kind: {
      type: 'pattern',
      pattern: /^(https?:\/\/)?[A-Za-z0-9._:[\]-]+(\/.*)?$/,
      what: 'host:port or an http(s) URL',
    },
    readers: ['agent'],
    default: 'http://127.0.0.1:11434',
    doc: 'the Ollama server',
  },

  // Egress (the agent's provider calls and the tools service's webhooks).
  {
    name: 'KEEL_EGRESS_ALLOW',
    kind: { type: 'cidr-list' },
    readers: ['agent', 'tools'],
    doc: 'CIDRs tenant-aimed calls (webhooks, provider baseUrl) may reach though not public, e.g. 10.1.0.0/16,fd00::/8; unset: none (npm start: 127.0.0.0/8,::1/128)',
  },

  // Tools.
  {
    name: 'KEEL_TOOLS_ACK_WAIT_MS',
    kind: ms(100, 3_600_000),
    readers: ['tools'],
    default: '10000',
    doc: "the tool-call consumer's ack wait",
  },
  {
    name: 'KEEL_HOOKS_BACKOFF_MS',
    kind: { type: 'pattern', pattern: /^\d{1,9}(,\d{1,9}){0,19}$/, what: 'comma-separated milliseconds' },
    readers: ['tools'],
    default: '1000,5000,30000,120000,600000',
    doc: 'waits between the attempts of a hook delivery; one more attempt than waits, then the dead letter',
  },
  {
    name: 'KEEL_HOOKS_LEASE_MS',
    kind: ms(500, 3_600_000),
    readers: ['tools'],
    default: '30000',
    doc: "how long a conversation's hook deliveries stay with a tools process that stopped answering",
  },
  {
    name: 'KEEL_HOOKS_POLL_MS',
    kind: ms(50, 60_000),
    readers: ['tools'],
    default: '1000',
    doc: 'how often the tools service looks for hook deliveries due (retries, other instances)',
  },

  // Audit.
  {
    name: 'KEEL_AUDIT_ACK_WAIT_MS',
    kind: ms(1000, 3_600_000),
    readers: ['audit'],
    default: '30000',
    doc: "the audit consumer's ack wait: how soon a killed audit process's delivery is redelivered",
  },

  // Dev mode (`npm start`) only.
  {
    name: 'KEEL_DEV_KEY',
    kind: { type: 'secret', minLength: 16 },
    readers: 'dev',
    doc: "pins the dev tenant's admin key (else: .keel/dev-key on a persisted store, new each start in memory)",
    secret: true,
  },
  {
    name: 'KEEL_DEV_KEY_FILE',
    kind: { type: 'pattern', pattern: /^\S+$/, what: 'a file path' },
    readers: 'dev',
    default: '.keel/dev-key',
    doc: 'where npm start keeps the dev key between starts on a persisted store (mode 0600)',
  },
  {
    name: 'KEEL_DEV_MODEL',
    kind: { type: 'pattern', pattern: /^[a-z]+:.+$/, what: 'provider:model, e.g. openai:gpt-4o-mini' },
    readers: 'dev',
    doc: "the demo agent's model (else: the first provider with a key, else demo:keel-demo)",
  },
];

/** `KEEL_*` names reserved for the test kit; never an error. */
export const TEST_ONLY_PREFIX = 'KEEL_TEST_';
