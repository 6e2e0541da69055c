import { afterAll } from 'vitest';
import { createPostgresDatabase } from '@agent-backend/store';
import { createTestSchema, testDatabaseUrl, type TestSchema } from '@agent-backend/testing';
import { describeSessionStoreContract } from './session-repository.contract.js';

const schemas: TestSchema[] = [];
afterAll(async () => {
  await Promise.all(schemas.map((s) => s.drop()));
});

describeSessionStoreContract('PostgreSQL', async () => {
  const schema = await createTestSchema('sessions');
  schemas.push(schema);
  return createPostgresDatabase({ url: testDatabaseUrl(), schema: schema.schema, max: 2 });
});
