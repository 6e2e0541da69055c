import type pg from 'pg';
import {
  DatabaseClosedError,
  QueryTimeoutError,
  type Database,
  type QueryResult,
  type Queryable,
  type Row,
} from './database.js';

export interface PostgresOptions {
  /** `postgres://` connection URL. */
  url: string;
  /** Schema that holds every table (created if missing); default: the connection's default. */
  schema?: string;
  /** Pool size. @default 10 */
  max?: number;
  /**
   * A statement that runs longer than this is cancelled by the server (`statement_timeout`), and
   * one whose reply does not arrive within {@link REPLY_MARGIN_MS} more (a stalled network, a
   * frozen server) is given up by the client, which closes its connection. Waiting this long for
   * a connection (a new one set up, or one of a full pool freed) fails too. Each fails with
   * {@link QueryTimeoutError}. Unset or 0: no limit (migrations run that way: they may rightly
   * take long, and wait for another replica's).
   */
  queryTimeoutMs?: number;
}

/**
 * How much longer than the server's `statement_timeout` the client waits for a reply, so that a
 * merely slow statement is cancelled by the server (its connection stays usable) and only a
 * reply that cannot come (the network or the server stalled) closes the connection.
 */
const REPLY_MARGIN_MS = 1_000;

/** SQLSTATE `query_canceled`: the server's `statement_timeout` (or a cancel request). */
const QUERY_CANCELED = '57014';

/**
 * How `pg` and `pg-pool` say that their `query_timeout` or `connectionTimeoutMillis` ran out.
 */
const TIMEOUT_MESSAGES = [
  'Query read timeout',
  'timeout exceeded when trying to connect',
  'Connection terminated due to connection timeout',
];

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

/** The durable store on a PostgreSQL server, through a `pg` connection pool. */
export async function createPostgresDatabase(options: PostgresOptions): Promise<Database> {
  // Loaded here, not at import: the embedded default (PGlite) never loads the driver.
  const { default: pg } = await import('pg');
  const { schema } = options;
  if (schema !== undefined && !IDENTIFIER.test(schema)) {
    throw new Error(`invalid schema name ${JSON.stringify(schema)}`);
  }
  if (schema) {
    // Create the schema before the pool's connections pin their search_path to it.
    const client = new pg.Client({ connectionString: options.url });
    await client.connect();
    try {
      await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    } finally {
      await client.end();
    }
  }
  const timeoutMs = options.queryTimeoutMs || undefined;
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.max ?? 10,
    options: schema ? `-c search_path="${schema}"` : undefined,
    statement_timeout: timeoutMs,
    query_timeout: timeoutMs && timeoutMs + REPLY_MARGIN_MS,
    connectionTimeoutMillis: timeoutMs ?? 0,
  });
  // An idle client losing its connection emits 'error' on the pool; without a listener that
  // would crash the process. The next query gets a fresh connection.
  pool.on('error', () => {});
  let closed = false;

  /** Whether the client gave up waiting (its connection is no longer usable). */
  const gaveUp = (error: unknown): boolean => {
    const inner = error instanceof QueryTimeoutError ? error.cause : error;
    return (
      timeoutMs !== undefined &&
      inner instanceof Error &&
      TIMEOUT_MESSAGES.some((m) => inner.message.startsWith(m))
    );
  };
  const translate = (error: unknown): unknown =>
    timeoutMs !== undefined &&
    !(error instanceof QueryTimeoutError) &&
    (gaveUp(error) || (error as { code?: unknown } | null)?.code === QUERY_CANCELED)
      ? new QueryTimeoutError(timeoutMs, { cause: error })
      : error;
  // `pool.query` closes the connection of a query that failed (a timed out one included).
  const run = async <R extends Row>(
    client: pg.Pool | pg.PoolClient,
    sql: string,
    params?: readonly unknown[],
  ): Promise<QueryResult<R>> => {
    try {
      const result = await client.query(sql, params as unknown[] | undefined);
      return { rows: result.rows as R[], rowCount: result.rowCount ?? result.rows.length };
    } catch (error) {
      throw translate(error);
    }
  };

  return {
    dialect: 'postgres',
    async query<R extends Row>(sql: string, params?: readonly unknown[]) {
      if (closed) throw new DatabaseClosedError();
      return run<R>(pool, sql, params);
    },
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      if (closed) throw new DatabaseClosedError();
      const client = await pool.connect().catch((error: unknown) => {
        throw translate(error);
      });
      // Set when the connection cannot be trusted any more: released with it, the pool closes it
      // (and the server rolls back what it had open).
      let broken: Error | undefined;
      try {
        await run(client, 'BEGIN');
        const result = await fn({ query: (sql, params) => run(client, sql, params) });
        await run(client, 'COMMIT');
        return result;
      } catch (error) {
        // A statement whose reply never came may still be running: a ROLLBACK would queue
        // behind it. (One the server cancelled has ended; its connection rolls back as usual.)
        if (gaveUp(error)) broken = error as Error;
        else
          await client.query('ROLLBACK').catch((rollbackError: unknown) => {
            broken = rollbackError as Error;
          });
        throw error;
      } finally {
        client.release(broken);
      }
    },
    async ping() {
      if (closed) throw new DatabaseClosedError();
      await run(pool, 'SELECT 1');
    },
    async close() {
      if (closed) return;
      closed = true;
      await pool.end();
    },
  };
}
