/** How long `eventually` keeps retrying and how often. */
export interface EventuallyOptions {
  timeoutMs?: number;
  intervalMs?: number;
}

/** Retries an (async) assertion until it passes, for effects that happen in another process. */
export async function eventually<T>(fn: () => T | Promise<T>, options: EventuallyOptions = {}): Promise<T> {
  const { timeoutMs = 10_000, intervalMs = 50 } = options;
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      if (Date.now() + intervalMs > deadline) {
        if (error instanceof Error) {
          error.message = `${error.message}\n(still failing after ${attempt} attempts in ${timeoutMs} ms)`;
        }
        throw error;
      }
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
