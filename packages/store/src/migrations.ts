import type { Database } from './database.js';
import type { Migration } from './migration.js';
import { MIGRATIONS_FROM_0001 } from './migrations-0001.js';
import { MIGRATIONS_FROM_0009 } from './migrations-0009.js';

export type { Migration } from './migration.js';

/**
 * Every schema change, in order. Applied once each, in one transaction each, identically on
 * PGlite and PostgreSQL. Append only; never edit a released migration. They are written in
 * modules named by their first migration (`migrations-0001.ts` holds 0001-0008); a new one goes at
 * the end of the last module, or starts the next module (listed here) once that one passes about
 * 300 lines.
 */
export const MIGRATIONS: readonly Migration[] = [...MIGRATIONS_FROM_0001, ...MIGRATIONS_FROM_0009];

/**
 * Brings the schema up to date. Safe to run from several replicas at once: a transaction-scoped
 * advisory lock (keyed by the current schema) serializes them, and each sees what the previous
 * one applied. Returns the ids it applied.
 */
export async function migrate(
  db: Database,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<string[]> {
  return db.transaction(async (tx) => {
    await tx.query(
      `SELECT pg_advisory_xact_lock(hashtext('agent-backend:migrations:' || current_schema()))`,
    );
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
