import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestSchema, testDatabaseUrl, type TestSchema } from '@agent-backend/testing';
import { describeDatabaseContract } from './database.contract.js';
import pg from 'pg';
import { createPostgresDatabase, migrate, MIGRATIONS, prepareVectorSearch } from './index.js';

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
