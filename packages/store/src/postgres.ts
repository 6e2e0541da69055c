import { createHash } from 'node:crypto';
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
  /**
   * Statements with parameters run as named prepared statements: each connection parses and
   * plans one once, then only binds and executes it (see {@link preparedNames}). Off: every
   * statement is parsed and planned each time, as a pooler in transaction mode without
   * prepared-statement support (PgBouncer before 1.21, or without `max_prepared_statements`)
   * requires. @default true
   */
  preparedStatements?: boolean;
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

/** Distinct statements one database prepares at most; any beyond run unnamed. */
const MAX_PREPARED_STATEMENTS = 500;

/**
 * The names of the statements a database runs prepared, given as they come. Not a statement
 * without parameters (nothing to reuse a plan for), nor one with a `*` (a `SELECT *` or
 * `RETURNING *` would fail with "cached plan must not change result type" on every connection
 * that prepared it once a migration added a column: another replica's, during a rolling
 * upgrade). Statements the server refused to run prepared (see `dropPrepared`) run unnamed.
 * A name is a digest of the statement's text: behind a pooler that hands one server connection
 * to several clients, a name the server knows always stands for the same statement, whichever
 * replica prepared it.
 */
function preparedNames(): {
  nameOf(sql: string, params: readonly unknown[] | undefined): string | undefined;
  drop(sql: string): void;
} {
  // A statement's name, or null: it runs unnamed (kept for a bounded number of statements).
  const names = new Map<string, string | null>();
  let named = 0;
  return {
    nameOf(sql, params) {
      if (!params?.length) return undefined;
      const known = names.get(sql);
      if (known !== undefined) return known ?? undefined;
      if (named >= MAX_PREPARED_STATEMENTS || sql.includes('*')) {
        if (names.size < MAX_PREPARED_STATEMENTS * 4) names.set(sql, null);
        return undefined;
      }
      named++;
      const name = `s_${createHash('sha256').update(sql).digest('hex').slice(0, 32)}`;
      names.set(sql, name);
      return name;
    },
    drop(sql) {
      names.set(sql, null);
    },
  };
}

/**
 * Errors after which a statement is no longer run prepared: a pooler that sends the bind to
 * another server connection than the parse (`26000` prepared statement does not exist, `42P05`
 * already exists) and a prepared plan whose result type changed under it (`0A000`). Each of
 * them is raised before the statement ran, so it is run again unnamed when no transaction is
 * open.
 */
function dropPrepared(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (
    code === '26000' ||
    code === '42P05' ||
    (code === '0A000' && /cached plan/.test((error as Error).message))
  );
}

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
  const prepared = options.preparedStatements === false ? undefined : preparedNames();

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
    const values = params as unknown[] | undefined;
    const name = prepared?.nameOf(sql, params);
    try {
      const result = await (name
        ? client.query({ name, text: sql, values })
        : client.query(sql, values));
      return { rows: result.rows as R[], rowCount: result.rowCount ?? result.rows.length };
    } catch (error) {
      if (name && dropPrepared(error)) {
        prepared!.drop(sql);
        // Outside a transaction nothing ran: once more, unnamed. In one, the transaction is
        // aborted; its caller sees the error (and its retry runs the statement unnamed).
        if (client === pool) return run(client, sql, params);
      }
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
