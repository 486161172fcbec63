import { now } from './stats.js';

/** The time each call of the relay's collaborators took, by method name. */
export class CallTimes {
  readonly calls = new Map<string, { count: number; ms: number }>();

  /** `target` with every method call timed under `<label>.<method>`; `onCall` sees each call first. */
  wrap<T extends object>(label: string, target: T, onCall?: (method: string, args: unknown[]) => void): T {
    return new Proxy(target, {
      get: (obj, key, receiver) => {
        const value: unknown = Reflect.get(obj, key, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          onCall?.(String(key), args);
          const start = now();
          const result: unknown = (value as (...a: unknown[]) => unknown).apply(obj, args);
          const record = (): void => {
            const entry = this.calls.get(`${label}.${String(key)}`) ?? { count: 0, ms: 0 };
            entry.count++;
            entry.ms += now() - start;
            this.calls.set(`${label}.${String(key)}`, entry);
          };
          if (result instanceof Promise) return result.finally(record);
          record();
          return result;
        };
      },
    });
  }
}
