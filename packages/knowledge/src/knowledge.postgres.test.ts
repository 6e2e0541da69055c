import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { createTestSchema, testDatabaseUrl, type TestSchema } from '@agent-backend/testing';
import { createPostgresDatabase } from '@agent-backend/store';
import { describeKnowledgeContract } from './knowledge.contract.js';

/**
 * Whether this server has pgvector. CI builds it (scripts/install-pgvector.sh) and the test
 * setup creates it in `public`; a server without it must still pass, on the plain-SQL path.
 */
async function serverHasPgvector(): Promise<boolean> {
  const client = new pg.Client({ connectionString: testDatabaseUrl() });
  await client.connect();
  try {
    const { rows } = await client.query(`SELECT 1 FROM pg_extension WHERE extname = 'vector'`);
    return rows.length > 0;
  } finally {
    await client.end();
  }
}

const schemas: TestSchema[] = [];
let hasPgvector = false;
beforeAll(async () => {
  hasPgvector = await serverHasPgvector();
  schemas.push(await createTestSchema('knowledge'), await createTestSchema('knowledge_off'));
});
afterAll(async () => {
  await Promise.all(schemas.map((s) => s.drop()));
});

describeKnowledgeContract(
  'PostgreSQL',
  () => createPostgresDatabase({ url: testDatabaseUrl(), schema: schemas[0]!.schema, max: 4 }),
  {
    get expectVector() {
      return hasPgvector ? ('pgvector' as const) : ('array' as const);
    },
  },
);
describeKnowledgeContract(
  'PostgreSQL with KNOWLEDGE_PGVECTOR=off',
  () => createPostgresDatabase({ url: testDatabaseUrl(), schema: schemas[1]!.schema, max: 4 }),
  { vectorMode: 'off', expectVector: 'array' },
);
