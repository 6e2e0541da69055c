/** A row as the driver returns it. */
export type Row = Record<string, unknown>;

export interface QueryResult<R extends Row = Row> {
  rows: R[];
  /** Rows inserted, updated, deleted or returned. */
  rowCount: number;
}

/** Something SQL can be sent to: the database, or a transaction in progress. */
export interface Queryable {
  /** Runs one statement with `$1`-style parameters. */
  query<R extends Row = Row>(sql: string, params?: readonly unknown[]): Promise<QueryResult<R>>;
}

/**
 * The durable store port: PostgreSQL SQL, served by PGlite (embedded, one process) or by a
 * PostgreSQL server (shared by every replica). Repositories and migrations are written once in
 * the SQL both understand.
 *
 * In the contract: parameters are bound, never interpolated; `transaction` commits when `fn`
 * resolves and rolls back when it rejects, and its statements never interleave with another
 * transaction's view; `text`, `integer`, `boolean`, `jsonb` (parsed) and `timestamptz` (a Date)
 * round-trip identically on both. After `close()` every method rejects; `close()` is idempotent.
 * Not in the contract: `bigint` columns (pg returns strings, PGlite numbers), so schemas avoid
 * them; concurrency across processes on PGlite (one process owns a data directory).
 */
export interface Database extends Queryable {
  readonly dialect: 'pglite' | 'postgres';
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Raised when a closed database is used. */
export class DatabaseClosedError extends Error {
  constructor() {
    super('database is closed');
    this.name = 'DatabaseClosedError';
  }
}

/**
 * Raised when PostgreSQL did not answer within the database's query timeout: a statement sent
 * got no reply, or no connection could be had (the pool full of stalled ones, or a new one not
 * set up in time). `code` is `ETIMEDOUT`, which the HTTP layer answers with 503 `unavailable`.
 */
export class QueryTimeoutError extends Error {
  readonly code = 'ETIMEDOUT';
  constructor(timeoutMs: number, options?: { cause?: unknown }) {
    super(`the database did not answer within ${timeoutMs} ms`, options);
    this.name = 'QueryTimeoutError';
  }
}
