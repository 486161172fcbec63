// Where the runtime measures a service's work: its HTTP requests (Fastify), its gRPC calls (a
// grpc-js server interceptor), its event store appends and its consumers' deliveries (wrappers around the
// infrastructure it is given), and the `/metrics` port of a service without HTTP.
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { ServerInterceptor } from '@grpc/grpc-js';
import { status as GrpcStatus, ServerInterceptingCall } from '@grpc/grpc-js';
import type { ConsumerOptions, EventBus, EventHandler, EventStoreAdapter } from '@keel/core';
import { ConfigError } from './config-error.js';
import type { Infrastructure } from './infrastructure.js';
import type { MetricsRegistry } from './metrics.js';
import { ServiceMetrics } from './metrics.js';

/** Calls `method` on the target itself (private fields), every other property as it is. */
const forwarding = <T extends object>(target: T, overrides: Partial<T>): T =>
  new Proxy(target, {
    get(object, property) {
      if (Object.hasOwn(overrides, property)) return overrides[property as keyof T];
      const value: unknown = Reflect.get(object, property, object);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(object) : value;
    },
  });

/** The store, timing each append as this service's. Everything else (and `instanceof`) as the store's. */
export const meteredStore = (store: EventStoreAdapter, metrics: ServiceMetrics): EventStoreAdapter =>
  forwarding(store, {
    append: async (tenantId, stream, events, options) => {
      const elapsed = ServiceMetrics.timer();
      try {
        const result = await store.append(tenantId, stream, events, options);
        metrics.append('ok', events.length, elapsed());
        return result;
      } catch (error) {
        metrics.append('error', events.length, elapsed());
        throw error;
      }
    },
  });

/** The bus, observing this service's consumers: deliveries by outcome, redeliveries, dead letters, pending. */
export const meteredBus = (bus: EventBus, metrics: ServiceMetrics): EventBus =>
  forwarding(bus, {
    consume: async (options: ConsumerOptions, handler: EventHandler) => {
      const observe = options.observe;
      const consumer = await bus.consume(
        {
          ...options,
          observe: (report) => {
            metrics.delivery(report.consumer, report.outcome, report.deliveryCount, report.seconds);
            observe?.(report);
          },
        },
        handler,
      );
      metrics.consumerStarted(consumer.name);
      const forget = bus.pending
        ? metrics.watchPending(consumer.name, () => bus.pending!(consumer.name))
        : () => undefined;
      return {
        name: consumer.name,
        stop: async () => {
          await consumer.stop();
          forget();
        },
      };
    },
  });

/** The infrastructure as one service sees it: the same connections, measured as its own. */
export const meteredInfrastructure = (infra: Infrastructure, metrics: ServiceMetrics): Infrastructure => ({
  ...infra,
  store: meteredStore(infra.store, metrics),
  bus: meteredBus(infra.bus, metrics),
  probe: (timeoutMs) => infra.probe(timeoutMs),
  close: () => infra.close(),
});

/** The Fastify surface `meterHttp` uses. */
export interface HookableHttp {
  addHook(
    name: 'onRequest',
    hook: (
      request: { method: string; routeOptions?: { url?: string } },
      reply: { raw: { statusCode: number; once(event: 'close', listener: () => void): unknown } },
      done: () => void,
    ) => void,
  ): unknown;
}

/**
 * Times every HTTP request until its response is finished or its connection closed (so a
 * hijacked SSE response counts when it ends), labelled with the route template (`unmatched` for
 * a path no route has): never the raw URL, which holds ids.
 */
export const meterHttp = (http: HookableHttp, metrics: ServiceMetrics): void => {
  http.addHook('onRequest', (request, reply, done) => {
    const elapsed = ServiceMetrics.timer();
    reply.raw.once('close', () => {
      const route = request.routeOptions?.url ?? 'unmatched';
      metrics.httpRequest(request.method, route, reply.raw.statusCode, elapsed());
    });
    done();
  });
};

/**
 * A grpc-js server interceptor timing every call the server answers (health, reflection and
 * calls refused by a guard included) by full method name and the status code sent.
 */
export const grpcMetricsInterceptor =
  (metrics: ServiceMetrics): ServerInterceptor =>
  (method, call) => {
    const elapsed = ServiceMetrics.timer();
    let recorded = false;
    const record = (code: number): void => {
      if (recorded) return;
      recorded = true;
      metrics.grpcCall(method.path, GrpcStatus[code] ?? String(code), elapsed());
    };
    return new ServerInterceptingCall(call, {
      start: (next) => next({ onCancel: () => record(GrpcStatus.CANCELLED) }),
      sendStatus: (status, next) => {
        record(status.code ?? GrpcStatus.UNKNOWN);
        next(status);
      },
    });
  };

/**
 * Serves `GET /metrics` (and nothing else) on `host:port` (`METRICS_PORT`); resolves once
 * listening. A port in use is a ConfigError naming the variable.
 */
export const serveMetrics = async (
  registry: MetricsRegistry,
  host: string,
  port: number,
): Promise<Server> => {
  const server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (request.method !== 'GET' || path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics\n');
      return;
    }
    registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => response.writeHead(500, { 'content-type': 'text/plain' }).end('metrics failed\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException): void =>
      reject(
        error.code === 'EADDRINUSE'
          ? new ConfigError('METRICS_PORT', `${port} is in use on ${host}: choose a free port`)
          : error,
      );
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      resolve();
    });
  });
  return server;
};
