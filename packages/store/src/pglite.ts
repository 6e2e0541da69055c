import { mkdirSync } from 'node:fs';
import type { PGlite } from '@electric-sql/pglite';
import {
  DatabaseClosedError,
  type Database,
  type QueryResult,
  type Queryable,
  type Row,
} from './database.js';
import { acquireDirLock } from './dir-lock.js';
import {
  defaultTemplateDir,
  openPglite,
  type OpenPgliteOptions,
  type PgliteOrigin,
} from './pglite-open.js';
import type { PgliteCacheChange } from './pglite-messages.js';
import { startPgliteThread } from './pglite-thread.js';

export interface PgliteOptions {
  /** Directory of the database files; omitted means in memory (tests). */
  dataDir?: string;
  /**
   * Load pgvector, so that `CREATE EXTENSION vector` works (knowledge-base vector search).
   * Without it, vector search falls back to plain SQL over `real[]`. @default true
   */
  vector?: boolean;
  /**
   * Run PGlite on its own worker thread, so long statements (a 10 MB document) do not hold this
   * thread's event loop. The service does (packages/engines); tests may use either. @default false
   */
  thread?: boolean;
  /**
   * Where a new database's initdb template is cached (see `openPglite`); `false` runs initdb
   * every time. @default `$XDG_CACHE_HOME/agent-backend` or `~/.cache/agent-backend`
   */
  templateDir?: string | false;
  /**
   * PostgreSQL's `shared_buffers`, in MB. @default sized by the data already in `dataDir`
   * (`sharedBuffersForData`)
   */
  sharedBuffersMb?: number | undefined;
  /**
   * With `thread` and a data directory, and no `sharedBuffersMb`: how often the thread sizes the
   * page cache again and grows it when the data grew ({@link PGLITE_CACHE_CHECK_MS} in the
   * service; absent: never).
   */
  cacheCheckMs?: number;
  /** Told when the thread grew the page cache (or failed to). */
  onCacheChange?: (change: PgliteCacheChange) => void;
}

/** How often the service's database thread checks whether the page cache should grow. */
export const PGLITE_CACHE_CHECK_MS = 60_000;

/** The embedded database, with how it was opened (for the start's log line). */
export interface PgliteDatabase extends Database {
  readonly origin: PgliteOrigin;
  /** The page cache (`shared_buffers`) it was opened with, in MB; the thread may grow it later. */
  readonly sharedBuffersMb: number;
}

/**
 * The durable store embedded in this process (PGlite: PostgreSQL compiled to WebAssembly).
 * A data directory is owned by one process at a time: a lock file refuses a second opener
 * (see {@link DataDirInUseError}) instead of letting two processes corrupt the files.
 */
export async function createPgliteDatabase(options: PgliteOptions = {}): Promise<PgliteDatabase> {
  let release = () => {};
  if (options.dataDir) {
    mkdirSync(options.dataDir, { recursive: true });
    release = acquireDirLock(options.dataDir);
  }
  const open: OpenPgliteOptions = {
    dataDir: options.dataDir,
    vector: options.vector !== false,
    templateDir: options.templateDir ?? defaultTemplateDir(),
    ...(options.sharedBuffersMb !== undefined ? { sharedBuffersMb: options.sharedBuffersMb } : {}),
  };
  if (options.thread) {
    try {
      const threaded = await startPgliteThread(
        { ...open, ...(options.cacheCheckMs ? { cacheCheckMs: options.cacheCheckMs } : {}) },
        options.onCacheChange,
      );
      return { ...threaded, close: () => threaded.close().finally(release) };
    } catch (error) {
      release();
      throw error;
    }
  }
  let db: PGlite;
  let origin: PgliteOrigin;
  let sharedBuffersMb: number;
  try {
    ({ db, origin, sharedBuffersMb } = await openPglite(open));
  } catch (error) {
    release();
    throw error;
  }
  let closed = false;

  const run = async <R extends Row>(
    target: Pick<PGlite, 'query'>,
    sql: string,
    params?: readonly unknown[],
  ): Promise<QueryResult<R>> => {
    const result = await target.query<R>(sql, params as unknown[] | undefined);
    return { rows: result.rows, rowCount: result.affectedRows || result.rows.length };
  };

  return {
    dialect: 'pglite',
    origin,
    sharedBuffersMb,
    async query<R extends Row>(sql: string, params?: readonly unknown[]) {
      if (closed) throw new DatabaseClosedError();
      return run<R>(db, sql, params);
    },
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      if (closed) throw new DatabaseClosedError();
      return db.transaction((tx) => fn({ query: (sql, params) => run(tx, sql, params) }));
    },
    async ping() {
      if (closed) throw new DatabaseClosedError();
      await db.query('SELECT 1');
    },
    async close() {
      if (closed) return;
      closed = true;
      try {
        await db.close();
      } finally {
        release();
      }
    },
  };
}
