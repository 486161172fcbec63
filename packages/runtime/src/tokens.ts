/** Nest injection token of the service's `Infrastructure` (store, bus, relay). */
export const KEEL_INFRA = Symbol.for('keel.infrastructure');

/** Nest injection token of the service's `KeelConfig`. */
export const KEEL_CONFIG = Symbol.for('keel.config');

/** Nest injection token of the service's pino logger. */
export const KEEL_LOGGER = Symbol.for('keel.logger');

/** Nest injection token of the service's Prometheus registry. */
export const KEEL_METRICS = Symbol.for('keel.metrics');

/** Nest injection token of the service's `ServiceMetrics` (its instruments, labelled with the service). */
export const KEEL_SERVICE_METRICS = Symbol.for('keel.service-metrics');
