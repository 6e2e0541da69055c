import { loadConfigOrExit } from '@agent-backend/config';
import { applyMigrations } from '@agent-backend/engines';
import { createLogger } from '@agent-backend/logger';

/**
 * The `migrate` command (`node apps/all-in-one/dist/migrate.js`, the Helm chart's migration
 * Job): applies pending migrations to `DATABASE_URL` under the migration lock, logs what it
 * applied, and exits 0; 1 when a migration failed (nothing of it is kept: each run is one
 * transaction), 2 without `DATABASE_URL`. Roles started with `MIGRATE_ON_START=false` rely on it.
 */
export async function runMigrateCommand(): Promise<never> {
  const config = loadConfigOrExit('all-in-one');
  if (!config.DATABASE_URL) {
    process.stderr.write(
      'migrate: DATABASE_URL is required (the embedded PGlite database is migrated by the all-in-one as it starts)\n',
    );
    process.exit(2);
  }
  const logger = createLogger({
    level: config.LOG_LEVEL,
    format: config.LOG_FORMAT,
    base: { role: 'migrate', instance: config.instanceId },
  });
  try {
    await applyMigrations(config, logger);
  } catch (error) {
    logger.error({ err: error }, 'migrations failed');
    process.stderr.write(`migrate failed: ${(error as Error).message}\n`);
    process.exit(1);
  }
  process.exit(0);
}
