import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestSchema, testDatabaseUrl, type TestSchema } from '@agent-backend/testing';
import { describeDatabaseContract } from './database.contract.js';
import { createPostgresDatabase, migrate, MIGRATIONS } from './index.js';

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
