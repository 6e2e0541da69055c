import { join } from 'node:path';
import type { Config } from '@agent-backend/config';
import {
  createPgliteDatabase,
  createPostgresDatabase,
  DataDirInUseError,
  dirLockHolder,
  migrate,
  pgliteDataDirExists,
  type Database,
} from '@agent-backend/store';

/**
 * How the operator's commands (`pnpm token:issue`, `token:revoke`, `keys:rotate`) reach the
 * store: PostgreSQL directly with `DATABASE_URL`; on the embedded default the running
 * all-in-one over its control socket (`viaService`), or the PGlite files (`direct`) when no
 * service holds them. With `absent`, PGlite files that do not exist yet are not created:
 * `absent` answers instead (a key rotation before the first start has no audit log to write to).
 */
export async function withStore<T>(
  config: Config,
  viaService: () => Promise<T>,
  direct: (db: Database) => Promise<T>,
  absent?: () => T,
): Promise<T> {
  const pgliteDir = join(config.DATA_DIR, 'pglite');
  if (!config.DATABASE_URL && dirLockHolder(pgliteDir) !== undefined) return viaService();
  if (!config.DATABASE_URL && absent && !pgliteDataDirExists(pgliteDir)) return absent();
  let db: Database;
  try {
    db = config.DATABASE_URL
      ? await createPostgresDatabase({
          url: config.DATABASE_URL,
          schema: config.DATABASE_SCHEMA,
          max: 1,
        })
      : await createPgliteDatabase({ dataDir: pgliteDir });
  } catch (error) {
    // The service started between our check and our open: ask it instead.
    if (error instanceof DataDirInUseError) return viaService();
    throw error;
  }
  try {
    await migrate(db);
    return await direct(db);
  } finally {
    await db.close();
  }
}
