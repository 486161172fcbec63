import type { KeelLogger } from './logger.js';

/** The signals that ask a Keel process to stop cleanly. */
export const SHUTDOWN_SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/**
 * On the first SIGTERM or SIGINT runs `stop` and exits 0, or 1 if it fails or takes longer than
 * `timeoutMs`. Later signals are logged and ignored: the deadline already bounds the wait.
 */
export function exitOnSignal(stop: () => Promise<void>, logger: KeelLogger, timeoutMs: number): void {
  let received: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (received !== undefined) {
      logger.warn({ signal }, 'shutdown already in progress');
      return;
    }
    received = signal;
    logger.info({ step: 'signal', signal, timeoutMs }, 'shutdown: signal received');
    const deadline = setTimeout(() => {
      logger.error({ step: 'timeout', timeoutMs }, 'shutdown: timed out; exiting with 1');
      process.exit(1);
    }, timeoutMs);
    void stop().then(
      () => {
        clearTimeout(deadline);
        logger.info({ step: 'exit', code: 0 }, 'shutdown: complete');
        process.exit(0);
      },
      (error: unknown) => {
        clearTimeout(deadline);
        logger.error({ step: 'exit', code: 1, err: error }, 'shutdown: failed');
        process.exit(1);
      },
    );
  };
  for (const signal of SHUTDOWN_SIGNALS) process.on(signal, onSignal);
}
