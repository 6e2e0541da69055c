import type { Database, Queryable } from './database.js';

/**
 * Whether vector search may use the pgvector extension: `auto` creates and uses it where the
 * database offers it; `off` never does (embeddings stay `real[]`, searched without an index).
 */
export type VectorMode = 'auto' | 'off';

/**
 * The tables with an `embedding` column (with `embedding_model` and `embedding_dims`) that
 * {@link prepareVectorSearch} settles together: knowledge-base chunks and memories.
 */
export const VECTOR_TABLES = ['knowledge_chunks', 'memories'] as const;
export type VectorTable = (typeof VECTOR_TABLES)[number];

/** How a table's `embedding` column is stored, which decides how vector search runs. */
export type VectorSupport =
  /** A pgvector `vector` column; `schema` is where the extension's type and operators live. */
  | { readonly kind: 'pgvector'; readonly schema: string; readonly version: string }
  /** A `real[]` column: vector similarity is computed with plain SQL (docs/knowledge-base.md). */
  | { readonly kind: 'array'; readonly reason: string };

/** Quotes an SQL identifier. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

interface ColumnType extends Record<string, unknown> {
  type_name: string;
  type_schema: string;
}

async function embeddingColumnType(
  db: Queryable,
  table: VectorTable,
): Promise<ColumnType | undefined> {
  const { rows } = await db.query<ColumnType>(
    `SELECT t.typname AS type_name, n.nspname AS type_schema
     FROM pg_attribute a
     JOIN pg_type t ON t.oid = a.atttypid
     JOIN pg_namespace n ON n.oid = t.typnamespace
     WHERE a.attrelid = to_regclass($1) AND a.attname = 'embedding'
       AND NOT a.attisdropped`,
    [table],
  );
  return rows[0];
}

/**
 * Keeps embeddings in the row (`STORAGE MAIN`: compressed in place, moved out only when the row
 * would not fit a page) instead of out of line: a vector search reads every embedding of the
 * searched bases, and reading them out of line cost 3–5× (docs/BENCHMARKS.md). Catalog only;
 * a type change resets it to the type's default, so it is checked after every conversion.
 */
async function keepEmbeddingsInRow(db: Queryable, table: VectorTable): Promise<void> {
  // Only when needed: the ALTER waits for an exclusive lock behind running searches, and every
  // query after it waits behind the ALTER, so a replica starting under load would stall search.
  const { rows } = await db.query<{ storage: string }>(
    `SELECT attstorage AS storage FROM pg_attribute
     WHERE attrelid = to_regclass($1) AND attname = 'embedding'`,
    [table],
  );
  if (rows[0]?.storage === 'm') return;
  await db.query(`ALTER TABLE ${table} ALTER COLUMN embedding SET STORAGE MAIN`);
}

async function installedVector(
  db: Queryable,
): Promise<{ schema: string; version: string } | undefined> {
  const { rows } = await db.query<{ schema: string; version: string }>(
    `SELECT n.nspname AS schema, e.extversion AS version
     FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
     WHERE e.extname = 'vector'`,
  );
  return rows[0];
}

/**
 * How embeddings of `table` are stored in this database now (read from the catalog, so every
 * replica agrees with whatever {@link prepareVectorSearch} decided at start).
 */
export async function vectorSupport(
  db: Queryable,
  table: VectorTable = 'knowledge_chunks',
): Promise<VectorSupport> {
  const column = await embeddingColumnType(db, table);
  if (!column) return { kind: 'array', reason: `${table}.embedding does not exist yet` };
  if (column.type_name === 'vector') {
    const ext = await installedVector(db);
    return { kind: 'pgvector', schema: column.type_schema, version: ext?.version ?? 'unknown' };
  }
  return { kind: 'array', reason: 'the pgvector extension is not installed in this database' };
}

/**
 * Settles how the `embedding` columns of {@link VECTOR_TABLES} are stored; run at start after
 * {@link migrate}, under the same advisory lock, so replicas starting together agree. Every
 * table gets the same storage; the answer is that of `knowledge_chunks`.
 *
 * With `auto`: where the `vector` extension is installed, or available and creatable by this
 * role (it is not a trusted extension: creating it takes a superuser or the database owner
 * with the right grants), the columns become pgvector `vector`s (converted in place from
 * `real[]`, which pgvector casts directly). Where not, they stay `real[]` and the reason is
 * returned for the log. With `off`, `vector` columns are converted back to `real[]`.
 * A newly created extension goes to the current schema; an installed one is used where it is.
 */
export async function prepareVectorSearch(
  db: Database,
  mode: VectorMode = 'auto',
): Promise<VectorSupport> {
  return db.transaction(async (tx) => {
    await tx.query(
      `SELECT pg_advisory_xact_lock(hashtext('agent-backend:migrations:' || current_schema()))`,
    );
    const columns: Array<[VectorTable, ColumnType]> = [];
    for (const table of VECTOR_TABLES) {
      const column = await embeddingColumnType(tx, table);
      if (column) columns.push([table, column]);
      else if (table === 'knowledge_chunks') {
        throw new Error('knowledge_chunks.embedding is missing: run the migrations first');
      }
    }
    const support = await settleExtension(tx, mode);
    for (const [table, column] of columns) {
      await convertColumn(tx, table, column, support);
      await keepEmbeddingsInRow(tx, table);
    }
    return support;
  });
}

/** Whether the columns are to be pgvector `vector`s (creating the extension if allowed). */
async function settleExtension(tx: Queryable, mode: VectorMode): Promise<VectorSupport> {
  if (mode === 'off') return { kind: 'array', reason: 'KNOWLEDGE_PGVECTOR=off' };
  let ext = await installedVector(tx);
  if (!ext) {
    const { rows } = await tx.query(`SELECT 1 FROM pg_available_extensions WHERE name = 'vector'`);
    if (rows.length === 0) {
      return { kind: 'array', reason: 'the pgvector extension is not available on this server' };
    }
    await tx.query('SAVEPOINT create_vector');
    try {
      await tx.query('CREATE EXTENSION IF NOT EXISTS vector');
      await tx.query('RELEASE SAVEPOINT create_vector');
    } catch (error) {
      await tx.query('ROLLBACK TO SAVEPOINT create_vector');
      const message = error instanceof Error ? error.message : String(error);
      return { kind: 'array', reason: `CREATE EXTENSION vector failed: ${message}` };
    }
    ext = await installedVector(tx);
    if (!ext) return { kind: 'array', reason: 'CREATE EXTENSION vector had no effect' };
  }
  return { kind: 'pgvector', schema: ext.schema, version: ext.version };
}

/** Converts one column to the storage {@link settleExtension} decided. */
async function convertColumn(
  tx: Queryable,
  table: VectorTable,
  column: ColumnType,
  support: VectorSupport,
): Promise<void> {
  if (support.kind === 'array') {
    // Only a `vector` column is converted back: a `real[]` one where pgvector is missing stays.
    if (column.type_name === 'vector') {
      await tx.query(
        `ALTER TABLE ${table} ALTER COLUMN embedding TYPE real[] USING embedding::real[]`,
      );
    }
    return;
  }
  if (column.type_name !== 'vector') {
    const type = `${quoteIdentifier(support.schema)}.vector`;
    await tx.query(
      `ALTER TABLE ${table} ALTER COLUMN embedding TYPE ${type} USING embedding::${type}`,
    );
  }
}
