import type { Database } from './database.js';

export interface Migration {
  /** Sortable and never renamed once released: `0001_refresh_tokens`. */
  readonly id: string;
  readonly sql: string;
}

/**
 * Every schema change, in order. Applied once each, in one transaction each, identically on
 * PGlite and PostgreSQL. Append only; never edit a released migration.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    id: '0001_refresh_tokens',
    sql: `
      CREATE TABLE refresh_tokens (
        token_hash   text PRIMARY KEY,            -- hex SHA-256 of the token; the token itself is never stored
        user_id      text NOT NULL,
        created_at   timestamptz NOT NULL DEFAULT now(),
        expires_at   timestamptz NOT NULL,
        revoked_at   timestamptz,
        last_used_at timestamptz
      );
      CREATE INDEX refresh_tokens_user_id_idx ON refresh_tokens (user_id);
    `,
  },
];

/**
 * Brings the schema up to date. Safe to run from several replicas at once: a transaction-scoped
 * advisory lock (keyed by the current schema) serializes them, and each sees what the previous
 * one applied. Returns the ids it applied.
 */
export async function migrate(db: Database, migrations: readonly Migration[] = MIGRATIONS): Promise<string[]> {
  return db.transaction(async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext('agent-backend:migrations:' || current_schema()))`);
    await tx.query(`
      CREATE TABLE IF NOT EXISTS schema_migrations (
        id         text PRIMARY KEY,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
    const { rows } = await tx.query<{ id: string }>('SELECT id FROM schema_migrations');
    const applied = new Set(rows.map((r) => r.id));
    const done: string[] = [];
    for (const migration of migrations) {
      if (applied.has(migration.id)) continue;
      for (const statement of splitStatements(migration.sql)) await tx.query(statement);
      await tx.query('INSERT INTO schema_migrations (id) VALUES ($1)', [migration.id]);
      done.push(migration.id);
    }
    return done;
  });
}

/**
 * Splits a migration into statements (the extended query protocol takes one at a time). Our
 * migrations keep `;` out of string literals and function bodies, which this relies on.
 */
function splitStatements(sql: string): string[] {
  return sql
    .replace(/--[^\n]*/g, '')
    .split(';')
    .map((s) => s.trim())
    .filter(Boolean);
}
