import type { DestinationStream, Logger } from 'pino';
import { pino } from 'pino';
import type { LogLevel } from './config.js';

/** The logger every service uses: pino, JSON lines on stdout. */
export type KeelLogger = Logger;

/** Paths never written to a log line: credentials travel in these fields. */
export const REDACTED_PATHS = [
  'authorization',
  '*.authorization',
  'headers.authorization',
  'req.headers.authorization',
  'apiKey',
  '*.apiKey',
  'key',
  '*.key',
  'secret',
  '*.secret',
  'password',
  '*.password',
  // A key's SHA-256 is what the gateway looks keys up by: as good as the key to a reader of logs.
  'keyHash',
  '*.keyHash',
];

/** Request-scoped fields that go on every line of a request. */
export interface LogContext {
  tenantId?: string;
  conversationId?: string;
  correlationId?: string;
}

/** Creates a service's root logger: `service` on every line, level from `LOG_LEVEL`, secrets redacted. */
export function createLogger(
  service: string,
  options: { level?: LogLevel; destination?: DestinationStream } = {},
): KeelLogger {
  const level =
    options.level ?? (process.env.LOG_LEVEL?.trim().toLowerCase() as LogLevel | undefined) ?? 'info';
  const settings = {
    level: level || 'info',
    base: { service, pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    formatters: { level: (label: string) => ({ level: label }) },
  };
  // Synchronous writes: the last lines before `process.exit` (shutdown steps) are never lost.
  return pino(settings, options.destination ?? pino.destination({ dest: 1, sync: true }));
}

/** A child logger carrying the request's tenant, conversation and correlation ids (absent ones left out). */
export function withLogContext(logger: KeelLogger, context: LogContext): KeelLogger {
  const fields = Object.fromEntries(
    Object.entries(context).filter(([, value]) => value !== undefined && value !== ''),
  );
  return logger.child(fields);
}
