export {
  DatabaseClosedError,
  QueryTimeoutError,
  type Database,
  type Queryable,
  type QueryResult,
  type Row,
} from './database.js';
export { createPostgresDatabase, type PostgresOptions } from './postgres.js';
export {
  createPgliteDatabase,
  PGLITE_CACHE_CHECK_MS,
  type PgliteDatabase,
  type PgliteOptions,
} from './pglite.js';
export type { PgliteCacheChange } from './pglite-messages.js';
export {
  defaultTemplateDir,
  pgliteDataDirExists,
  templateFile,
  type PgliteOrigin,
} from './pglite-open.js';
export { DataDirInUseError, dirLockHolder } from './dir-lock.js';
export { migrate, MIGRATIONS, type Migration } from './migrations.js';
export { RefreshTokenRepository, type RefreshTokenRecord } from './refresh-tokens.js';
export { TokenCutoffRepository, type TokenCutoff } from './token-cutoffs.js';
export {
  AuditLog,
  type AuditActor,
  type AuditEntry,
  type AuditPageQuery,
  type AuditRecord,
} from './audit-log.js';
export {
  prepareVectorSearch,
  quoteIdentifier,
  vectorSupport,
  VECTOR_TABLES,
  type VectorMode,
  type VectorSupport,
  type VectorTable,
} from './vector.js';
