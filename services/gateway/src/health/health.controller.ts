import type { Infrastructure, MetricsRegistry } from '@keel/runtime';
import { KEEL_INFRA, KEEL_METRICS } from '@keel/runtime';
import { Controller, Get, Inject, Res } from '@nestjs/common';
import { Public } from '../auth/roles.decorator.js';

/** The part of Fastify's reply the probes set: status and content type. */
interface ProbeReply {
  status(code: number): unknown;
  header(name: string, value: string): unknown;
}

/** A problem+json body (RFC 9457) with the API's `code`. */
interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
}

/** `/healthz`, `/readyz`, `/metrics`: the unauthenticated probes operators and Kubernetes use. */
@Controller()
@Public()
export class HealthController {
  constructor(
    @Inject(KEEL_INFRA) private readonly infra: Infrastructure,
    @Inject(KEEL_METRICS) private readonly metrics: MetricsRegistry,
  ) {}

  /** The process is up and serving HTTP. */
  @Get('healthz')
  healthz(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /** 200 when the store and the bus answer; 503 problem+json naming what does not. */
  @Get('readyz')
  async readyz(@Res({ passthrough: true }) reply: ProbeReply): Promise<{ status: 'ok' } | Problem> {
    const report = await this.infra.probe();
    if (report.ready) return { status: 'ok' };
    const failing = [
      ...(report.store.ok
        ? []
        : [`store (${this.infra.kinds.store}): ${report.store.error ?? 'unreachable'}`]),
      ...(report.bus.ok ? [] : [`bus (${this.infra.kinds.bus}): ${report.bus.error ?? 'unreachable'}`]),
    ];
    reply.status(503);
    reply.header('content-type', 'application/problem+json');
    return {
      type: 'about:blank',
      title: 'Service Unavailable',
      status: 503,
      detail: `not ready: ${failing.join('; ')}`,
      code: 'unavailable',
    };
  }

  /** Prometheus text: process metrics and the outbox relay's. */
  @Get('metrics')
  metricsText(@Res({ passthrough: true }) reply: ProbeReply): Promise<string> {
    reply.header('content-type', this.metrics.contentType);
    return this.metrics.metrics();
  }
}
