/**
 * Vitest global setup: makes sure every test process has a real Redis and a real PostgreSQL.
 *
 * `REDIS_URL` / `DATABASE_URL` from the environment are used as they are (CI and these machines
 * run both locally). Where one is unset, a container is started with testcontainers and its URL
 * is exported to the test processes through the same variables. Where the server offers pgvector,
 * the extension is created in schema `public`.
 */
import pg from 'pg';
import type { StartedTestContainer } from 'testcontainers';

export default async function setup(): Promise<() => Promise<void>> {
  const started: StartedTestContainer[] = [];
  if (!process.env.REDIS_URL) {
    const { RedisContainer } = await import('@testcontainers/redis');
    const redis = await new RedisContainer('redis:7-alpine').start();
    started.push(redis);
    process.env.REDIS_URL = redis.getConnectionUrl();
  }
  if (!process.env.DATABASE_URL) {
    const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
    const postgres = await new PostgreSqlContainer('pgvector/pgvector:pg16').start();
    started.push(postgres);
    process.env.DATABASE_URL = postgres.getConnectionUri();
  }
  await createVectorExtension(process.env.DATABASE_URL);
  return async () => {
    await Promise.all(started.map((c) => c.stop()));
  };
}

/**
 * Creates the pgvector extension in schema `public` where the server offers it, so the
 * knowledge-base search can use it. Tests run in per-test schemas with a pinned search_path;
 * none of them may own the extension, since dropping that schema would drop it for all. A
 * failure (e.g. no privilege) only prints a warning and does not fail the setup.
 */
async function createVectorExtension(databaseUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  try {
    await client.connect();
    const available = await client.query(
      "select 1 from pg_available_extensions where name = 'vector'",
    );
    if (available.rowCount) {
      await client.query('create extension if not exists vector schema public');
    }
  } catch (error) {
    console.warn(`global setup: cannot create extension vector in schema public: ${String(error)}`);
  } finally {
    await client.end().catch(() => undefined);
  }
}
