import type { OutboxRelay } from '@keel/core';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * A process's Prometheus registry. A process running one service has one; the dev mode (five
 * services in one process) shares one among the five, so its `/metrics` shows all of them. Every
 * `keel_*` series carries the `service` that produced it (see `ServiceMetrics`); the process's
 * own series (Node.js defaults, the outbox relay) carry the process's owner: the service, or `dev`.
 */
export type MetricsRegistry = Registry;

/** What a model call ended as: `cancelled` when its turn was cancelled meanwhile. */
export type ModelCallOutcome = 'ok' | 'error' | 'cancelled';
/** How a turn ended. */
export type TurnOutcome = 'completed' | 'failed' | 'cancelled';
/** Tokens of a model call, by kind. */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
}

const SECONDS_FAST = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const SECONDS_REQUEST = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const SECONDS_SLOW = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

/** Every `keel_*` instrument of one registry, created once and shared by its services. */
const createInstruments = (registry: Registry) => {
  const registers = [registry];
  /** Per service, the consumers whose pending count a scrape reads. */
  const pendingSources = new Map<string, Map<string, () => Promise<number | undefined>>>();
  const pending: Gauge = new Gauge({
    name: 'keel_consumer_pending_events',
    help: 'Events a durable consumer has not acknowledged yet (not delivered, or in flight), read at scrape time',
    labelNames: ['service', 'consumer'],
    registers,
    collect: async () => {
      const reads = [...pendingSources].flatMap(([service, consumers]) =>
        [...consumers].map(async ([consumer, read]) => {
          const value = await read().catch(() => undefined);
          if (value === undefined) pending.remove({ service, consumer });
          else pending.set({ service, consumer }, value);
        }),
      );
      await Promise.all(reads);
    },
  });
  return {
    pendingSources,
    pending,

    httpDuration: new Histogram({
      name: 'keel_http_request_duration_seconds',
      help: 'HTTP requests answered, by route template (never the raw URL), method and status; _count counts them',
      labelNames: ['service', 'method', 'route', 'status'],
      buckets: SECONDS_REQUEST,
      registers,
    }),
    grpcDuration: new Histogram({
      name: 'keel_grpc_server_duration_seconds',
      help: 'gRPC calls served, by full method name and status code; _count counts them',
      labelNames: ['service', 'method', 'code'],
      buckets: SECONDS_REQUEST,
      registers,
    }),
    sseOpen: new Gauge({
      name: 'keel_sse_streams_open',
      help: 'SSE responses (turn streams, events feeds) open now',
      labelNames: ['service'],
      registers,
    }),
    turnsStarted: new Counter({
      name: 'keel_turns_started_total',
      help: 'Turns started (TurnStarted events the turn worker took)',
      labelNames: ['service'],
      registers,
    }),
    turnsFinished: new Counter({
      name: 'keel_turns_finished_total',
      help: 'Turns ended, by outcome: completed, failed or cancelled',
      labelNames: ['service', 'outcome'],
      registers,
    }),
    turnDuration: new Histogram({
      name: 'keel_turn_duration_seconds',
      help: 'From a turn starting to its end, by outcome (turns this instance saw start)',
      labelNames: ['service', 'outcome'],
      buckets: SECONDS_SLOW,
      registers,
    }),
    timeToFirstToken: new Histogram({
      name: 'keel_turn_time_to_first_token_seconds',
      help: 'From a turn starting to the first text token of its first model step, by model',
      labelNames: ['service', 'model'],
      buckets: SECONDS_SLOW,
      registers,
    }),
    modelDuration: new Histogram({
      name: 'keel_model_call_duration_seconds',
      help: 'Model calls (one per step), by model and outcome: ok, error or cancelled',
      labelNames: ['service', 'model', 'outcome'],
      buckets: SECONDS_SLOW,
      registers,
    }),
    tenantCost: new Counter({
      name: 'keel_tenant_cost_usd_total',
      help: 'Cost in US dollars of recorded model calls, by tenant, counted as the audit service projects them (unpriced calls add nothing)',
      labelNames: ['service', 'tenant'],
      registers,
    }),
    tokens: new Counter({
      name: 'keel_model_tokens_total',
      help: 'Tokens of recorded model calls, by model and kind: prompt, completion, cache_read, cache_write',
      labelNames: ['service', 'model', 'kind'],
      registers,
    }),
    cost: new Counter({
      name: 'keel_model_cost_usd_total',
      help: 'Cost in US dollars of recorded model calls, by model (unpriced calls add nothing)',
      labelNames: ['service', 'model'],
      registers,
    }),
    unpriced: new Counter({
      name: 'keel_model_calls_unpriced_total',
      help: 'Recorded model calls pricing could not price (their cost is null), by model',
      labelNames: ['service', 'model'],
      registers,
    }),
    toolDuration: new Histogram({
      name: 'keel_tool_call_duration_seconds',
      help: 'Tool calls executed, by tool kind (webhook, builtin, unknown) and outcome (ok, error, refused)',
      labelNames: ['service', 'kind', 'outcome'],
      buckets: SECONDS_REQUEST,
      registers,
    }),
    deliveries: new Counter({
      name: 'keel_consumer_deliveries_total',
      help: 'Event deliveries to consumers, by consumer and outcome: handled, skipped, retry, dead-lettered',
      labelNames: ['service', 'consumer', 'outcome'],
      registers,
    }),
    redeliveries: new Counter({
      name: 'keel_consumer_redeliveries_total',
      help: 'Deliveries that were not the first of their event (after a failure or an expired ack wait)',
      labelNames: ['service', 'consumer'],
      registers,
    }),
    deadLetters: new Counter({
      name: 'keel_consumer_dead_letters_total',
      help: 'Events dead-lettered by a consumer after its last allowed delivery',
      labelNames: ['service', 'consumer'],
      registers,
    }),
    handlerDuration: new Histogram({
      name: 'keel_consumer_handler_duration_seconds',
      help: "A consumer's handling of one delivery, by consumer",
      labelNames: ['service', 'consumer'],
      buckets: SECONDS_REQUEST,
      registers,
    }),
    appendDuration: new Histogram({
      name: 'keel_event_store_append_duration_seconds',
      help: 'Event store appends (one commit each), by outcome: ok or error',
      labelNames: ['service', 'outcome'],
      buckets: SECONDS_FAST,
      registers,
    }),
    eventsAppended: new Counter({
      name: 'keel_events_appended_total',
      help: 'Events appended to the event store',
      labelNames: ['service'],
      registers,
    }),
  };
};

type Instruments = ReturnType<typeof createInstruments>;

const instrumentsOf = new WeakMap<Registry, Instruments>();
const instruments = (registry: Registry): Instruments => {
  let found = instrumentsOf.get(registry);
  if (!found) {
    found = createInstruments(registry);
    instrumentsOf.set(registry, found);
  }
  return found;
};

/** A new, empty registry: pass it to `processMetrics` and to each service's `ServiceMetrics`. */
export const createMetricsRegistry = (): MetricsRegistry => new Registry();

/**
 * The process's own series, labelled `service=<owner>`: Node.js process metrics and the outbox
 * relay's (published events, position, lease, and lag: how old the oldest event committed but
 * not yet published is, and the delay of each event from commit to publish).
 */
export function processMetrics(registry: MetricsRegistry, owner: string, relay: OutboxRelay): void {
  const labels = { service: owner };
  collectDefaultMetrics({ register: registry, labels });
  new Counter({
    name: 'keel_outbox_published_events_total',
    help: 'Events this process published from the outbox to the bus',
    labelNames: ['service'],
    registers: [registry],
    collect() {
      this.reset();
      this.inc(labels, relay.stats.published);
    },
  });
  new Gauge({
    name: 'keel_outbox_position',
    help: 'Global log position up to which this relay has published',
    labelNames: ['service'],
    registers: [registry],
    collect() {
      this.set(labels, relay.stats.position);
    },
  });
  new Gauge({
    name: 'keel_outbox_lease_held',
    help: '1 when this process holds the outbox lease (is the publishing relay), else 0',
    labelNames: ['service'],
    registers: [registry],
    collect() {
      this.set(labels, relay.stats.holdsLease ? 1 : 0);
    },
  });
  new Gauge({
    name: 'keel_outbox_lag_seconds',
    help: 'Age of the oldest event committed but not yet published, on the publishing relay (0: caught up)',
    labelNames: ['service'],
    registers: [registry],
    async collect() {
      if (!relay.stats.holdsLease) {
        this.remove(labels);
        return;
      }
      const oldest = await relay.oldestUnpublished().catch(() => undefined);
      this.set(labels, oldest === undefined ? 0 : Math.max(0, (Date.now() - Date.parse(oldest)) / 1000));
    },
  });
  const delay = new Histogram({
    name: 'keel_outbox_publish_delay_seconds',
    help: 'From an event being committed to this relay publishing it on the bus',
    labelNames: ['service'],
    buckets: SECONDS_FAST.concat([10, 30, 60]),
    registers: [registry],
  });
  relay.onPublished((events) => {
    const now = Date.now();
    for (const event of events)
      delay.observe(labels, Math.max(0, (now - Date.parse(event.recordedAt)) / 1000));
  });
}

/** Longest label value kept (a model name); longer ones are cut. */
const MAX_LABEL_CHARS = 100;
const label = (value: string): string => value.slice(0, MAX_LABEL_CHARS);

const seconds = (startedAt: bigint): number => Number(process.hrtime.bigint() - startedAt) / 1e9;

/**
 * One service's metrics: every method records into the registry's shared instruments with this
 * service's label, so five services in one process each report their own. Domain code sees it
 * only through the narrow ports it declares (turns, tool calls, SSE streams); the runtime
 * instruments the edges (HTTP, gRPC, consumers, the event store).
 */
export class ServiceMetrics {
  readonly #i: Instruments;

  constructor(
    readonly registry: MetricsRegistry,
    readonly service: string,
  ) {
    this.#i = instruments(registry);
  }

  /** A timer: call the result to get the seconds elapsed. */
  static timer(): () => number {
    const startedAt = process.hrtime.bigint();
    return () => seconds(startedAt);
  }

  httpRequest(method: string, route: string, status: number, elapsed: number): void {
    this.#i.httpDuration.observe({ service: this.service, method, route, status: String(status) }, elapsed);
  }

  grpcCall(method: string, code: string, elapsed: number): void {
    this.#i.grpcDuration.observe({ service: this.service, method, code }, elapsed);
  }

  /** Counts an SSE response open; call the result when it closes. */
  sseOpened(): () => void {
    const labels = { service: this.service };
    this.#i.sseOpen.inc(labels);
    let closed = false;
    return () => {
      if (closed) return;
      closed = true;
      this.#i.sseOpen.dec(labels);
    };
  }

  turnStarted(): void {
    this.#i.turnsStarted.inc({ service: this.service });
  }

  /** A turn ended; `elapsed` when known (this instance saw it start). */
  turnFinished(outcome: TurnOutcome, elapsed: number | undefined): void {
    this.#i.turnsFinished.inc({ service: this.service, outcome });
    if (elapsed !== undefined) this.#i.turnDuration.observe({ service: this.service, outcome }, elapsed);
  }

  firstToken(model: string, elapsed: number): void {
    this.#i.timeToFirstToken.observe({ service: this.service, model: label(model) }, elapsed);
  }

  modelCall(model: string, outcome: ModelCallOutcome, elapsed: number): void {
    this.#i.modelDuration.observe({ service: this.service, model: label(model), outcome }, elapsed);
  }

  /** A recorded model call's tokens and cost (null: unpriced). */
  modelUsage(agentModel: string, usage: TokenUsage, costUsd: number | null): void {
    const { service } = this;
    const model = label(agentModel);
    const kinds: [string, number | undefined][] = [
      ['prompt', usage.promptTokens],
      ['completion', usage.completionTokens],
      ['cache_read', usage.cacheReadTokens],
      ['cache_write', usage.cacheWriteTokens],
    ];
    for (const [kind, count] of kinds) {
      if (count !== undefined && count > 0) this.#i.tokens.inc({ service, model, kind }, count);
    }
    if (costUsd === null) this.#i.unpriced.inc({ service, model });
    else this.#i.cost.inc({ service, model }, costUsd);
  }

  /** A model call's cost counted for its tenant (the audit projection, once per call it projects). */
  tenantCost(tenantId: string, costUsd: number): void {
    this.#i.tenantCost.inc({ service: this.service, tenant: tenantId }, costUsd);
  }

  toolCall(kind: string, outcome: 'ok' | 'error' | 'refused', elapsed: number): void {
    this.#i.toolDuration.observe({ service: this.service, kind, outcome }, elapsed);
  }

  delivery(consumer: string, outcome: string, deliveryCount: number, elapsed: number): void {
    const { service } = this;
    this.#i.deliveries.inc({ service, consumer, outcome });
    if (deliveryCount > 1) this.#i.redeliveries.inc({ service, consumer });
    if (outcome === 'dead-lettered') this.#i.deadLetters.inc({ service, consumer });
    if (outcome === 'handled' || outcome === 'retry' || outcome === 'dead-lettered')
      this.#i.handlerDuration.observe({ service, consumer }, elapsed);
  }

  /** A consumer started: its redelivery and dead-letter counters show 0 until something happens. */
  consumerStarted(consumer: string): void {
    const labels = { service: this.service, consumer };
    this.#i.redeliveries.inc(labels, 0);
    this.#i.deadLetters.inc(labels, 0);
  }

  /** Reads the consumer's pending count at each scrape (until the consumer is forgotten). */
  watchPending(consumer: string, read: () => Promise<number | undefined>): () => void {
    const sources = this.#i.pendingSources;
    const mine = sources.get(this.service) ?? new Map<string, () => Promise<number | undefined>>();
    sources.set(this.service, mine);
    mine.set(consumer, read);
    return () => {
      if (mine.get(consumer) !== read) return;
      mine.delete(consumer);
      this.#i.pending.remove({ service: this.service, consumer });
    };
  }

  append(outcome: 'ok' | 'error', events: number, elapsed: number): void {
    this.#i.appendDuration.observe({ service: this.service, outcome }, elapsed);
    if (outcome === 'ok') this.#i.eventsAppended.inc({ service: this.service }, events);
  }
}

/**
 * The registry of a process running one service (`owner` labels its process series), as it was:
 * kept for callers that build a registry alone.
 */
export function createMetrics(service: string, relay: OutboxRelay): MetricsRegistry {
  const registry = createMetricsRegistry();
  processMetrics(registry, service, relay);
  return registry;
}
