import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The Redis every test talks to (set by the global setup). */
export function testRedisUrl(): string {
  const url = process.env.REDIS_URL;
  if (!url) throw new Error('REDIS_URL is not set: the vitest global setup did not run');
  return url;
}

/** The PostgreSQL every test talks to (set by the global setup). */
export function testDatabaseUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set: the vitest global setup did not run');
  return url;
}

/** A short random id, safe in Redis keys and PostgreSQL identifiers. */
export function randomId(bytes = 6): string {
  return randomBytes(bytes).toString('hex');
}

/** A Redis key prefix no other test uses, so tests can share one Redis. */
export function uniquePrefix(label = 't'): string {
  return `test:${label}:${randomId()}:`;
}

export interface TestSchema {
  /** The schema's name, to pass as the store's `schema` option. */
  readonly schema: string;
  /** Drops the schema and everything in it. */
  drop(): Promise<void>;
}

/** Creates an empty PostgreSQL schema for one test file, so tests can share one database. */
export async function createTestSchema(label = 't'): Promise<TestSchema> {
  const schema = `test_${label.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}_${randomId()}`;
  const client = new pg.Client({ connectionString: testDatabaseUrl() });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA "${schema}"`);
  } finally {
    await client.end();
  }
  return {
    schema,
    async drop() {
      const c = new pg.Client({ connectionString: testDatabaseUrl() });
      await c.connect();
      try {
        await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await c.end();
      }
    },
  };
}
