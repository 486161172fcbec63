// Records keyed by ids a user chose (tool names, agent ids, user ids): a plain lookup `record[id]`
// finds Object.prototype's members for `toString`, `constructor`, `__proto__` …, and a plain
// assignment to `__proto__` replaces the prototype. These read and write own properties only.

/** The value `record` holds under `key` as its own property, else undefined. */
export const ownValue = <V>(record: Readonly<Record<string, V>>, key: string): V | undefined =>
  Object.hasOwn(record, key) ? record[key] : undefined;

/** Whether `record` holds `key` as its own property. */
export const hasOwnKey = (record: object, key: string): boolean => Object.hasOwn(record, key);

/** A copy of `record` with `key` set to `value` as an own, enumerable property (`__proto__` included). */
export const withOwn = <V>(record: Readonly<Record<string, V>>, key: string, value: V): Record<string, V> => {
  const copy = { ...record };
  Object.defineProperty(copy, key, { value, writable: true, enumerable: true, configurable: true });
  return copy;
};
