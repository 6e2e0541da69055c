import type { Queryable } from '@agent-backend/store';

/**
 * `read(db)` remembered per database handle (a failed read is forgotten), read again after
 * `ttlMs`, or when the caller asks for a fresh value.
 */
export function perHandle<T>(read: (db: Queryable) => Promise<T>, ttlMs = Infinity) {
  const cache = new WeakMap<Queryable, { at: number; value: Promise<T> }>();
  return (db: Queryable, fresh = false): Promise<T> => {
    const cached = cache.get(db);
    if (cached && !fresh && Date.now() - cached.at < ttlMs) return cached.value;
    const value = read(db);
    cache.set(db, { at: Date.now(), value });
    value.catch(() => cache.delete(db));
    return value;
  };
}
