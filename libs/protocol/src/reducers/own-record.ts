// Plain-object maps keyed by ids from the log: own-property access only, so no id ("__proto__",
// "constructor") can reach Object.prototype. The objects stay JSON-serialisable.

/** A string-keyed map stored as a plain object. */
export type OwnRecord<V> = Record<string, V>;

export function getOwn<V>(record: OwnRecord<V>, key: string): V | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/** Sets `key` on `record` in place (a draft the caller owns) as an own, enumerable property. */
export function setOwn<V>(record: OwnRecord<V>, key: string, value: V): void {
  Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Removes `key` from `record` in place (a draft the caller owns). */
export function deleteOwn<V>(record: OwnRecord<V>, key: string): void {
  if (Object.hasOwn(record, key)) delete record[key];
}
