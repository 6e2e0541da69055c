import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestSchema,
  startTcpProxy,
  testDatabaseUrl,
  type TestSchema,
} from '@agent-backend/testing';
import { describeDatabaseContract } from './database.contract.js';
import pg from 'pg';
import { createHash } from 'node:crypto';
import {
  createPostgresDatabase,
  migrate,
  MIGRATIONS,
  prepareVectorSearch,
  QueryTimeoutError,
} from './index.js';

let schema: TestSchema;
beforeAll(async () => {
  schema = await createTestSchema('store');
});
afterAll(async () => {
  await schema.drop();
});

describeDatabaseContract('PostgreSQL', () =>
  createPostgresDatabase({ url: testDatabaseUrl(), schema: schema.schema, max: 4 }),
);

describe('PostgreSQL migrations across replicas', () => {
  it('applies each migration once when several replicas migrate at the same time', async () => {
    const fresh = await createTestSchema('migrate');
    const replicas = await Promise.all(
      [1, 2, 3].map(() =>
        createPostgresDatabase({ url: testDatabaseUrl(), schema: fresh.schema, max: 2 }),
      ),
    );
    try {
      const applied = await Promise.all(replicas.map((db) => migrate(db)));
      expect(applied.flat().sort()).toEqual(MIGRATIONS.map((m) => m.id));
      const { rows } = await replicas[0]!.query('SELECT count(*)::int AS n FROM schema_migrations');
      expect(rows[0]).toEqual({ n: MIGRATIONS.length });
    } finally {
      await Promise.all(replicas.map((db) => db.close()));
      await fresh.drop();
    }
  });

  it('refuses an invalid schema name before connecting', async () => {
    await expect(
      createPostgresDatabase({ url: testDatabaseUrl(), schema: 'x"; DROP' }),
    ).rejects.toThrow(/invalid schema/);
  });
});

describe('PostgreSQL vector search preparation', () => {
  it('does not wait for searches already running when a replica starts again', async () => {
    const fresh = await createTestSchema('vector');
    const db = await createPostgresDatabase({ url: testDatabaseUrl(), schema: fresh.schema });
    const reader = new pg.Client({ connectionString: testDatabaseUrl() });
    await reader.connect();
    try {
      await migrate(db);
      const first = await prepareVectorSearch(db);
      // A search in progress on another connection holds its lock on the table until it ends.
      await reader.query('BEGIN');
      await reader.query(`SELECT count(*) FROM ${fresh.schema}.knowledge_chunks`);
      await reader.query(`SELECT count(*) FROM ${fresh.schema}.memories`);
      const again = prepareVectorSearch(db);
      const blocked = new Promise((resolve) => setTimeout(() => resolve('blocked'), 10_000));
      expect(await Promise.race([again, blocked])).toEqual(first);
      const { rows } = await db.query<{ table: string; storage: string }>(
        `SELECT attrelid::regclass::text AS table, attstorage AS storage FROM pg_attribute
         WHERE attrelid IN (to_regclass('knowledge_chunks'), to_regclass('memories'))
           AND attname = 'embedding' ORDER BY 1`,
      );
      expect(rows).toEqual([
        { table: 'knowledge_chunks', storage: 'm' },
        { table: 'memories', storage: 'm' },
      ]);
    } finally {
      await reader.query('ROLLBACK').catch(() => undefined);
      await reader.end();
      await db.close();
      await fresh.drop();
    }
  });
});

describe('PostgreSQL behind a stalled network', () => {
  it('fails statements and transactions after the query timeout, then recovers', async () => {
    const fresh = await createTestSchema('stall');
    const url = new URL(testDatabaseUrl());
    const proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    const db = await createPostgresDatabase({
      url: url.toString(),
      schema: fresh.schema,
      max: 2,
      queryTimeoutMs: 500,
    });
    try {
      await db.query('CREATE TABLE stalled (id text PRIMARY KEY)');
      proxy.setMode('stall');
      // More statements than the pool has connections: two wait for a reply, the rest for a
      // connection; every one of them fails with the timeout instead of waiting for the network.
      const outcomes = await Promise.allSettled([
        db.query('SELECT 1'),
        db.transaction((tx) => tx.query(`INSERT INTO stalled VALUES ('during')`)),
        db.query('SELECT 2'),
        db.ping(),
      ]);
      for (const outcome of outcomes) {
        expect(outcome.status).toBe('rejected');
        const reason = (outcome as PromiseRejectedResult).reason as Error;
        expect(reason).toBeInstanceOf(QueryTimeoutError);
        expect(reason).toMatchObject({ code: 'ETIMEDOUT' });
      }
      // A new connection cannot be set up through the stall either.
      await expect(db.query('SELECT 3')).rejects.toBeInstanceOf(QueryTimeoutError);

      proxy.setMode('forward');
      // The stalled connections were closed, not put back: new ones serve the next statements.
      await db.transaction((tx) => tx.query(`INSERT INTO stalled VALUES ('after')`));
      const { rows } = await db.query<{ id: string }>('SELECT id FROM stalled ORDER BY id');
      // The transaction that timed out did not commit (or committed exactly once: it may have
      // reached the server before the stall); the one after it did.
      expect(rows.map((r) => r.id).filter((id) => id === 'after')).toEqual(['after']);
      expect(rows.length).toBeLessThanOrEqual(2);
    } finally {
      proxy.setMode('forward');
      await db.close();
      await proxy.close();
      await fresh.drop();
    }
  });

  it('has the server end a statement that runs past the timeout', async () => {
    const fresh = await createTestSchema('slow');
    const db = await createPostgresDatabase({
      url: testDatabaseUrl(),
      schema: fresh.schema,
      queryTimeoutMs: 300,
    });
    const observer = new pg.Client({ connectionString: testDatabaseUrl() });
    await observer.connect();
    const marker = `slow-${fresh.schema}`;
    const running = async () =>
      (
        await observer.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE $1`,
          [`%${marker}%`],
        )
      ).rows[0].n as number;
    try {
      await expect(db.query(`SELECT pg_sleep(5) -- ${marker}`)).rejects.toBeInstanceOf(
        QueryTimeoutError,
      );
      // The server cancelled it (statement_timeout) instead of sleeping 5 s.
      let left = await running();
      for (let i = 0; left > 0 && i < 30; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        left = await running();
      }
      expect(left).toBe(0);
      expect(await db.query('SELECT 1 AS one')).toMatchObject({ rows: [{ one: 1 }] });
    } finally {
      await observer.end();
      await db.close();
      await fresh.drop();
    }
  });
});

describe('PostgreSQL prepared statements', () => {
  /** The statements the connection of a one-connection database holds prepared. */
  const preparedOn = async (db: Awaited<ReturnType<typeof createPostgresDatabase>>) =>
    (
      await db.query<{ name: string; statement: string }>(
        'SELECT name, statement FROM pg_prepared_statements ORDER BY name',
      )
    ).rows;

  const withTable = async (
    preparedStatements: boolean,
    fn: (db: Awaited<ReturnType<typeof createPostgresDatabase>>) => Promise<void>,
  ) => {
    const fresh = await createTestSchema('prepared');
    const db = await createPostgresDatabase({
      url: testDatabaseUrl(),
      schema: fresh.schema,
      max: 1,
      preparedStatements,
    });
    try {
      await db.query('CREATE TABLE t (id int PRIMARY KEY, a int NOT NULL)');
      await db.query('INSERT INTO t VALUES (1, 10), (2, 20)');
      await fn(db);
    } finally {
      await db.close();
      await fresh.drop();
    }
  };

  it('parses a statement with parameters once per connection, not one without or with a *', async () => {
    await withTable(true, async (db) => {
      const byId = 'SELECT a FROM t WHERE id = $1';
      expect((await db.query(byId, [1])).rows).toEqual([{ a: 10 }]);
      expect((await db.query(byId, [2])).rows).toEqual([{ a: 20 }]);
      await db.query('SELECT * FROM t WHERE id = $1', [1]);
      await db.query('SELECT a FROM t');
      // Named by a digest of the text: the same statement has the same name on every replica.
      expect(await preparedOn(db)).toEqual([
        {
          name: `s_${createHash('sha256').update(byId).digest('hex').slice(0, 32)}`,
          statement: byId,
        },
      ]);
    });
  });

  it('prepares nothing when turned off', async () => {
    await withTable(false, async (db) => {
      expect((await db.query('SELECT a FROM t WHERE id = $1', [2])).rows).toEqual([{ a: 20 }]);
      expect(await preparedOn(db)).toEqual([]);
    });
  });

  it('runs a statement unnamed once its prepared plan changed result type', async () => {
    await withTable(true, async (db) => {
      const byId = 'SELECT a FROM t WHERE id = $1';
      await db.query(byId, [1]);
      // A migration (another replica's, during a rolling upgrade) changes the column's type.
      await db.query('ALTER TABLE t ALTER COLUMN a TYPE text');
      expect((await db.query(byId, [1])).rows).toEqual([{ a: '10' }]);
      // Inside a transaction the same refusal aborts it; the statement then runs unnamed.
      const sum = 'SELECT a, id FROM t WHERE id = $1';
      await db.query(sum, [2]);
      await db.query('ALTER TABLE t ALTER COLUMN id TYPE bigint');
      await expect(db.transaction((tx) => tx.query(sum, [2]))).rejects.toThrow(/cached plan/);
      expect(await db.transaction(async (tx) => (await tx.query(sum, [2])).rows)).toEqual([
        { a: '20', id: '2' },
      ]);
    });
  });
});
