import type { DynamicModule, LoggerService } from '@nestjs/common';
import { Module } from '@nestjs/common';
import type { KeelConfig } from './config.js';
import type { Infrastructure } from './infrastructure.js';
import type { KeelLogger } from './logger.js';
import type { MetricsRegistry, ServiceMetrics } from './metrics.js';
import { KEEL_CONFIG, KEEL_INFRA, KEEL_LOGGER, KEEL_METRICS, KEEL_SERVICE_METRICS } from './tokens.js';

/** What the runtime hands to a service's Nest module. */
export interface RuntimeProviders {
  config: KeelConfig;
  logger: KeelLogger;
  infra: Infrastructure;
  /** The registry `/metrics` renders (the whole process's). */
  metrics: MetricsRegistry;
  /** This service's instruments (`KEEL_SERVICE_METRICS`). */
  serviceMetrics?: ServiceMetrics;
}

/**
 * A global module providing `KEEL_CONFIG`, `KEEL_LOGGER`, `KEEL_INFRA`, `KEEL_METRICS` and
 * `KEEL_SERVICE_METRICS` to every module.
 */
@Module({})
export class KeelRuntimeModule {
  /** The module for one service's application. */
  static forService(providers: RuntimeProviders): DynamicModule {
    return {
      module: KeelRuntimeModule,
      global: true,
      providers: [
        { provide: KEEL_CONFIG, useValue: providers.config },
        { provide: KEEL_LOGGER, useValue: providers.logger },
        { provide: KEEL_INFRA, useValue: providers.infra },
        { provide: KEEL_METRICS, useValue: providers.metrics },
        { provide: KEEL_SERVICE_METRICS, useValue: providers.serviceMetrics },
      ],
      exports: [KEEL_CONFIG, KEEL_LOGGER, KEEL_INFRA, KEEL_METRICS, KEEL_SERVICE_METRICS],
    };
  }
}

/** Nest's own log lines (routes mapped, module init, errors) through the service's pino logger. */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly logger: KeelLogger) {}

  log(message: unknown, ...rest: unknown[]): void {
    this.logger.debug(fields(rest), text(message));
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.logger.error(
      { ...fields(rest), ...(message instanceof Error ? { err: message } : {}) },
      text(message),
    );
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.logger.warn(fields(rest), text(message));
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.logger.debug(fields(rest), text(message));
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.logger.trace(fields(rest), text(message));
  }
  fatal(message: unknown, ...rest: unknown[]): void {
    this.logger.fatal(fields(rest), text(message));
  }
}

const text = (message: unknown): string =>
  typeof message === 'string'
    ? message
    : message instanceof Error
      ? message.message
      : JSON.stringify(message);

/** Nest passes optional context (last) and a stack trace (for errors) after the message. */
const fields = (rest: unknown[]): object => {
  const strings = rest.filter((item): item is string => typeof item === 'string');
  const context = strings.at(-1);
  const stack = strings.length > 1 ? strings[0] : undefined;
  return { component: 'nest', ...(context ? { context } : {}), ...(stack ? { stack } : {}) };
};
