import { afterAll, beforeAll } from 'vitest';
import { createTestSchema, testDatabaseUrl, type TestSchema } from '@agent-backend/testing';
import { createPostgresDatabase } from '@agent-backend/store';
import { describeSkillsContract } from './skills.contract.js';

let schema: TestSchema;
beforeAll(async () => {
  schema = await createTestSchema('skills');
});
afterAll(async () => {
  await schema.drop();
});

describeSkillsContract('PostgreSQL', () =>
  createPostgresDatabase({ url: testDatabaseUrl(), schema: schema.schema, max: 4 }),
);
