import pg from 'pg';
import {
  DatabaseClosedError,
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
}

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

/** The durable store on a PostgreSQL server, through a `pg` connection pool. */
export async function createPostgresDatabase(options: PostgresOptions): Promise<Database> {
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
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.max ?? 10,
    options: schema ? `-c search_path="${schema}"` : undefined,
  });
  // An idle client losing its connection emits 'error' on the pool; without a listener that
  // would crash the process. The next query gets a fresh connection.
  pool.on('error', () => {});
  let closed = false;

  const run = async <R extends Row>(
    client: pg.Pool | pg.PoolClient,
    sql: string,
    params?: readonly unknown[],
  ): Promise<QueryResult<R>> => {
    const result = await client.query(sql, params as unknown[] | undefined);
    return { rows: result.rows as R[], rowCount: result.rowCount ?? result.rows.length };
  };

  return {
    dialect: 'postgres',
    async query<R extends Row>(sql: string, params?: readonly unknown[]) {
      if (closed) throw new DatabaseClosedError();
      return run<R>(pool, sql, params);
    },
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      if (closed) throw new DatabaseClosedError();
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await fn({ query: (sql, params) => run(client, sql, params) });
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    },
    async ping() {
      if (closed) throw new DatabaseClosedError();
      await pool.query('SELECT 1');
    },
    async close() {
      if (closed) return;
      closed = true;
      await pool.end();
    },
  };
}
