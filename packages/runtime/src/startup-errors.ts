// What a user sees when a start fails on their own settings: one line naming the variable to
// change (`PORT 8080 is already in use on 127.0.0.1 (set PORT to another port)`), exit code 1,
// never a stack trace. Bugs still print in full.
import { inspect } from 'node:util';
import { setLogger } from '@grpc/grpc-js';
import { ConfigError } from './config-error.js';
import type { KeelConfig } from './config.js';

const inUse = (error: unknown): boolean => {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  // Node's listen sets `code`; grpc-js only names the cause in its message.
  return code === 'EADDRINUSE' || (typeof message === 'string' && message.includes('EADDRINUSE'));
};

const taken = (variable: string, host: string, port: number): ConfigError =>
  new ConfigError(variable, `${port} is already in use on ${host} (set ${variable} to another port)`);

/**
 * The ConfigError a failed listen stands for when its port is taken: `PORT` for the gateway's
 * HTTP server (Node's error carries the port), else the variable that chose the gRPC port.
 * Undefined for any other failure.
 */
export const portInUseError = (
  error: unknown,
  config: Pick<KeelConfig, 'httpHost' | 'httpPort' | 'grpcHost' | 'grpcPort' | 'grpcPortVariable'>,
): ConfigError | undefined => {
  if (error instanceof ConfigError || !inUse(error)) return undefined;
  if ((error as { port?: unknown }).port === config.httpPort) {
    return taken('PORT', config.httpHost, config.httpPort);
  }
  return taken(config.grpcPortVariable, config.grpcHost, config.grpcPort);
};

let installed = false;

/**
 * Makes an error that ends the process print as one line when it is a ConfigError (the user's
 * setting, named), and in full otherwise; either way the exit code is 1. For composition roots:
 * a rejected top-level `await` reaches this too.
 */
export const exitOnFatalError = (): void => {
  if (installed) return;
  installed = true;
  // grpc-js prints a bind failure before throwing it; the thrown error is reported, once.
  setLogger({
    error: (message?: unknown, ...rest: unknown[]) => {
      if (typeof message === 'string' && message.startsWith('No address added')) return;
      console.error(`E ${String(message)}`, ...rest);
    },
    info: (message?: unknown, ...rest: unknown[]) => console.error(`I ${String(message)}`, ...rest),
    debug: (message?: unknown, ...rest: unknown[]) => console.error(`D ${String(message)}`, ...rest),
  });
  process.on('uncaughtException', (error: unknown) => {
    process.stderr.write(`${error instanceof ConfigError ? error.message : inspect(error)}\n`);
    process.exit(1);
  });
};
