import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestSchema,
  startTcpProxy,
  testDatabaseUrl,
  type TestSchema,
} from '@agent-backend/testing';
import { describeDatabaseContract } from './database.contract.js';
import pg from 'pg';
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
