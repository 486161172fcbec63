import type { OutboxRelay } from '@keel/core';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';

/** A service's Prometheus registry: process metrics plus the outbox relay's. */
export type MetricsRegistry = Registry;

/**
 * Creates the registry `/metrics` renders: default process metrics (labelled with the service)
 * and the outbox relay's published events, checkpoint position and lease, read at scrape time.
 */
export function createMetrics(service: string, relay: OutboxRelay): MetricsRegistry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  new Counter({
    name: 'keel_outbox_published_events_total',
    help: 'Events this process published from the outbox to the bus',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(relay.stats.published);
    },
  });
  new Gauge({
    name: 'keel_outbox_position',
    help: 'Global log position up to which this relay has published',
    registers: [registry],
    collect() {
      this.set(relay.stats.position);
    },
  });
  new Gauge({
    name: 'keel_outbox_lease_held',
    help: '1 when this process holds the outbox lease (is the publishing relay), else 0',
    registers: [registry],
    collect() {
      this.set(relay.stats.holdsLease ? 1 : 0);
    },
  });
  return registry;
}
