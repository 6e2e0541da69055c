import type { OpenPgliteOptions, PgliteOrigin } from './pglite-open.js';

/**
 * Messages between the main thread and the thread that runs PGlite ({@link createPgliteDatabase}
 * with `thread: true`). Requests carry an id; each is answered once, with the same id.
 */

/** What the main thread asks. `tx` names an open transaction (from a `begin` answer). */
export type PgliteRequest =
  | {
      readonly id: number;
      readonly kind: 'query';
      readonly sql: string;
      readonly params?: readonly unknown[];
      readonly tx?: number;
    }
  | { readonly id: number; readonly kind: 'begin' }
  | { readonly id: number; readonly kind: 'end'; readonly tx: number; readonly commit: boolean }
  | { readonly id: number; readonly kind: 'close' };

/** A driver error as plain data: its message, name and fields (`code`, `detail`, ...). */
export interface SerializedError {
  readonly name: string;
  readonly message: string;
  readonly fields: Record<string, unknown>;
}

/**
 * The page cache grown (PGlite reopened) from `fromMb` to `toMb` in `ms`; with `error`, the
 * reopen with `toMb` failed and `toMb` is what the database has now (0: it could not be reopened).
 */
export interface PgliteCacheChange {
  readonly fromMb: number;
  readonly toMb: number;
  readonly ms: number;
  readonly error?: SerializedError;
}

/**
 * The thread's answers: `ready` once PGlite is open (or `failed`), then one per request, and
 * `cache` whenever the page cache grew.
 */
export type PgliteResponse =
  | { readonly kind: 'ready'; readonly origin: PgliteOrigin; readonly sharedBuffersMb: number }
  | ({ readonly kind: 'cache' } & PgliteCacheChange)
  | { readonly kind: 'failed'; readonly error: SerializedError }
  | {
      readonly id: number;
      readonly ok: true;
      readonly rows?: unknown[];
      readonly rowCount?: number;
      readonly tx?: number;
    }
  | { readonly id: number; readonly ok: false; readonly error: SerializedError };

/**
 * The options the thread opens PGlite with: `openPglite`'s own, and how often it sizes the page
 * cache again (absent or 0: never; only with a data directory and no fixed size).
 */
export type PgliteThreadData = OpenPgliteOptions & { readonly cacheCheckMs?: number };

/** An error as data that survives `postMessage` with its driver fields. */
export function serializeError(error: unknown): SerializedError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error), fields: {} };
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(error)) {
    if (value === undefined || typeof value === 'function') continue;
    if (typeof value === 'object' && value !== null) continue;
    fields[key] = value;
  }
  return { name: error.name, message: error.message, fields };
}

/** The error again, on the main thread, with the fields the driver set. */
export function deserializeError(error: SerializedError): Error {
  const revived = Object.assign(new Error(error.message), error.fields);
  revived.name = error.name;
  return revived;
}
