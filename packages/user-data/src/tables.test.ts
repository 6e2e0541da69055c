import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgliteDatabase, migrate, type Database } from '@agent-backend/store';
import { TABLE_PLANS } from './tables.js';

describe('the table plan of exports and erasures', () => {
  let db: Database;
  beforeAll(async () => {
    db = await createPgliteDatabase({ vector: false });
    await migrate(db);
  });
  afterAll(() => db.close());

  it('decides for every table of the migrations, and knows every column that names a user', async () => {
    const { rows } = await db.query<{ table_name: string; column_name: string }>(
      `SELECT c.table_name, c.column_name FROM information_schema.columns c
       JOIN information_schema.tables t USING (table_schema, table_name)
       WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'`,
    );
    const tables = new Set(rows.map((r) => r.table_name));
    expect([...tables].sort()).toEqual(Object.keys(TABLE_PLANS).sort());
    for (const table of tables) {
      const userColumns = rows
        .filter((r) => r.table_name === table && /user/.test(r.column_name))
        .map((r) => r.column_name);
      expect({ table, userColumns }).toEqual({
        table,
        userColumns: TABLE_PLANS[table]!.userColumns,
      });
    }
  });
});
