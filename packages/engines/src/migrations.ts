import type { Config } from '@agent-backend/config';
import type { Logger } from '@agent-backend/logger';
import {
  createPostgresDatabase,
  migrate,
  MIGRATIONS,
  prepareVectorSearch,
  type Database,
} from '@agent-backend/store';

const elapsedMs = (since: number) => Math.round(performance.now() - since);
const seconds = (since: number) => `${((performance.now() - since) / 1000).toFixed(1)} s`;

/**
 * Applies pending migrations and settles the knowledge vector columns (pgvector or plain SQL),
 * under the migration lock, so replicas and the `migrate` command may run it at the same time.
 * On PostgreSQL it takes a connection of its own without the query timeout of requests (a
 * migration may rightly run long, or wait for another's); `embedded` is the PGlite database
 * when `DATABASE_URL` is unset. Returns the ids of the migrations it applied.
 */
export async function applyMigrations(
  config: Config,
  logger: Logger,
  embedded?: Database,
): Promise<string[]> {
  const db = config.DATABASE_URL
    ? await createPostgresDatabase({
        url: config.DATABASE_URL,
        schema: config.DATABASE_SCHEMA,
        max: 1,
      })
    : embedded;
  if (!db) throw new Error('applyMigrations: DATABASE_URL is unset and no embedded database given');
  try {
    const started = performance.now();
    const applied = await migrate(db);
    // One line per start, with its time: the last setup step a first `npm start` shows.
    logger.info(
      { applied, ms: elapsedMs(started) },
      applied.length > 0
        ? `migrations: ${applied.length} applied in ${seconds(started)}`
        : `migrations: schema up to date (${seconds(started)})`,
    );
    const vector = await prepareVectorSearch(db, config.KNOWLEDGE_PGVECTOR);
    if (vector.kind === 'pgvector') {
      logger.info({ version: vector.version }, 'knowledge vector search: pgvector');
    } else {
      logger.info({ reason: vector.reason }, 'knowledge vector search: plain SQL (no pgvector)');
    }
    return applied;
  } finally {
    if (db !== embedded) await db.close();
  }
}

/**
 * The migrations this version knows that `db` has not applied (all of them on a database never
 * migrated). A role started with `MIGRATE_ON_START=false` refuses to run on such a schema.
 */
export async function pendingMigrations(db: Database): Promise<string[]> {
  let applied: Set<string>;
  try {
    const { rows } = await db.query<{ id: string }>('SELECT id FROM schema_migrations');
    applied = new Set(rows.map((row) => row.id));
  } catch (error) {
    // 42P01: undefined_table, a database never migrated.
    if ((error as { code?: string }).code !== '42P01') throw error;
    applied = new Set();
  }
  return MIGRATIONS.map((m) => m.id).filter((id) => !applied.has(id));
}
