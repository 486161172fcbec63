/**
 * Resolves after `ms`, or rejects with the signal's reason as soon as `signal` aborts: the one
 * pause of the code base (a caller that wants an abort to end the wait early, not fail it, adds
 * `.catch(() => undefined)`).
 */
export const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
