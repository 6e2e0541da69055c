import { afterAll, beforeAll } from 'vitest';
import { createTestSchema, testDatabaseUrl, type TestSchema } from '@agent-backend/testing';
import { createPostgresDatabase } from '@agent-backend/store';
import { describeKnowledgeContract } from './knowledge.contract.js';

let schema: TestSchema;
beforeAll(async () => {
  schema = await createTestSchema('knowledge');
});
afterAll(async () => {
  await schema.drop();
});

describeKnowledgeContract('PostgreSQL', () =>
  createPostgresDatabase({ url: testDatabaseUrl(), schema: schema.schema, max: 4 }),
);
