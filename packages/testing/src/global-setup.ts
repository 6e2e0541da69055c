/**
 * Vitest global setup: makes sure every test process has a real Redis and a real PostgreSQL.
 *
 * `REDIS_URL` / `DATABASE_URL` from the environment are used as they are (CI and these machines
 * run both locally). Where one is unset, a container is started with testcontainers and its URL
 * is exported to the test processes through the same variables.
 */
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
    const pg = await new PostgreSqlContainer('pgvector/pgvector:pg16').start();
    started.push(pg);
    process.env.DATABASE_URL = pg.getConnectionUri();
  }
  return async () => {
    await Promise.all(started.map((c) => c.stop()));
  };
}
