import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AuditLog,
  DatabaseClosedError,
  migrate,
  RefreshTokenRepository,
  type Database,
} from './index.js';

/**
 * The durable-store contract: the same expectations against PGlite and PostgreSQL, so SQL
 * written once behaves the same on both engines.
 */
export function describeDatabaseContract(name: string, open: () => Promise<Database>): void {
  describe(`Database contract: ${name}`, () => {
    let db: Database;
    beforeAll(async () => {
      db = await open();
      await migrate(db);
    });
    afterAll(async () => {
      await db.close();
    });

    it('migrations are applied once; running them again applies nothing', async () => {
      expect(await migrate(db)).toEqual([]);
      const { rows } = await db.query<{ id: string }>(
        'SELECT id FROM schema_migrations ORDER BY id',
      );
      expect(rows.map((r) => r.id)).toContain('0001_refresh_tokens');
    });

    it('binds parameters and round-trips the supported types', async () => {
      await db.query(`CREATE TABLE IF NOT EXISTS contract_types (
        id text PRIMARY KEY, n integer, b boolean, j jsonb, t timestamptz, x text)`);
      const at = new Date('2026-01-02T03:04:05.678Z');
      const evil = "'); DROP TABLE contract_types; --";
      await db.query('INSERT INTO contract_types VALUES ($1, $2, $3, $4, $5, $6)', [
        'a',
        42,
        true,
        JSON.stringify({ nested: [1, 'two', null] }),
        at,
        evil,
      ]);
      const { rows, rowCount } = await db.query('SELECT * FROM contract_types WHERE id = $1', [
        'a',
      ]);
      expect(rowCount).toBe(1);
      expect(rows[0]).toEqual({
        id: 'a',
        n: 42,
        b: true,
        j: { nested: [1, 'two', null] },
        t: at,
        x: evil,
      });
      const nulls = await db.query('SELECT $1::text AS v', [null]);
      expect(nulls.rows[0]).toEqual({ v: null });
    });

    it('commits a transaction that resolves and rolls back one that rejects', async () => {
      await db.query('CREATE TABLE IF NOT EXISTS contract_tx (id text PRIMARY KEY)');
      await db.transaction(async (tx) => {
        await tx.query('INSERT INTO contract_tx VALUES ($1)', ['kept']);
      });
      await expect(
        db.transaction(async (tx) => {
          await tx.query('INSERT INTO contract_tx VALUES ($1)', ['dropped']);
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      const { rows } = await db.query<{ id: string }>('SELECT id FROM contract_tx ORDER BY id');
      expect(rows.map((r) => r.id)).toEqual(['kept']);
    });

    it('serializes concurrent read-modify-write transactions that lock the row', async () => {
      await db.query(
        'CREATE TABLE IF NOT EXISTS contract_counter (id text PRIMARY KEY, n integer NOT NULL)',
      );
      await db.query(
        `INSERT INTO contract_counter VALUES ('c', 0) ON CONFLICT (id) DO UPDATE SET n = 0`,
      );
      await Promise.all(
        Array.from({ length: 20 }, () =>
          db.transaction(async (tx) => {
            const { rows } = await tx.query<{ n: number }>(
              `SELECT n FROM contract_counter WHERE id = 'c' FOR UPDATE`,
            );
            await tx.query(`UPDATE contract_counter SET n = $1 WHERE id = 'c'`, [rows[0]!.n + 1]);
          }),
        ),
      );
      const { rows } = await db.query<{ n: number }>(
        `SELECT n FROM contract_counter WHERE id = 'c'`,
      );
      expect(rows[0]!.n).toBe(20);
    });

    it('reports SQL errors without poisoning later queries', async () => {
      await expect(db.query('SELECT * FROM no_such_table')).rejects.toThrow(/no_such_table/);
      await expect(db.transaction((tx) => tx.query('SELECT broken syntax here'))).rejects.toThrow();
      await db.ping();
    });

    it('stores refresh tokens by hash and uses only live ones', async () => {
      const repo = new RefreshTokenRepository(db);
      const now = new Date();
      const later = new Date(now.getTime() + 60_000);
      await repo.insert({ tokenHash: 'h-live', userId: 'u1', expiresAt: later });
      await repo.insert({
        tokenHash: 'h-old',
        userId: 'u1',
        expiresAt: new Date(now.getTime() - 1),
      });
      await repo.insert({ tokenHash: 'h-rev', userId: 'u2', expiresAt: later });

      expect(await repo.use('h-live', now)).toMatchObject({
        userId: 'u1',
        revokedAt: null,
        expiresAt: later,
      });
      expect(await repo.use('h-old', now)).toBeNull();
      expect(await repo.use('h-unknown', now)).toBeNull();
      expect(await repo.revoke('h-rev')).toBe('u2');
      expect(await repo.revoke('h-rev')).toBeNull();
      expect(await repo.use('h-rev', now)).toBeNull();
      expect((await repo.find('h-rev'))?.revokedAt).toBeInstanceOf(Date);
      await expect(
        repo.insert({ tokenHash: 'h-live', userId: 'u3', expiresAt: later }),
      ).rejects.toThrow();
    });

    it('tells a refresh from a new client, once', async () => {
      const repo = new RefreshTokenRepository(db);
      const now = new Date();
      await repo.insert({ tokenHash: 'h-cl', userId: 'u1', expiresAt: new Date(+now + 60_000) });
      expect(await repo.use('h-cl', now, 'client-a')).toMatchObject({ newClient: true });
      expect(await repo.use('h-cl', now, 'client-a')).toMatchObject({ newClient: false });
      expect(await repo.use('h-cl', now)).toMatchObject({ newClient: false });
      const both = await Promise.all([repo.use('h-cl', now, 'b'), repo.use('h-cl', now, 'b')]);
      expect(both.filter((use) => use?.newClient)).toHaveLength(1);
    });

    it('keeps an append-only audit log, newest first, purged by age', async () => {
      const audit = new AuditLog(db);
      // Past ten events, so a page sorted as text ('10' < '9') would show.
      for (const n of Array.from({ length: 9 }, (_, i) => i)) {
        await audit.record({ action: `filler.${n}`, userId: 'audit-filler', actor: 'service' });
      }
      for (const action of ['a.one', 'a.two', 'a.three']) {
        await audit.record({ action, userId: 'audit-u', actor: 'user', details: { n: 1 } });
      }
      await audit.record({ action: 'a.one', userId: 'audit-other', actor: 'operator' });
      const page = await audit.page({ userId: 'audit-u', limit: 2 });
      expect(page.map((e) => e.action)).toEqual(['a.three', 'a.two']);
      const next = await audit.page({
        userId: 'audit-u',
        limit: 2,
        beforeEventId: page[1]!.eventId,
      });
      expect(next.map((e) => e.action)).toEqual(['a.one']);
      expect(next[0]).toMatchObject({ actor: 'user', details: { n: 1 }, clientAddress: null });
      await db.query(`UPDATE audit_log SET action = 'changed' WHERE user_id = 'audit-u'`);
      expect((await audit.page({ action: 'changed', limit: 10 })).length).toBe(0);
      expect(await audit.purge(new Date(Date.now() + 60_000), 2)).toBe(2);
      expect((await audit.page({ limit: 20 })).length).toBe(11);
      const all = await audit.page({ limit: 20 });
      expect(all.map((e) => Number(e.eventId))).toEqual(
        all.map((e) => Number(e.eventId)).sort((a, b) => b - a),
      );
    });

    it('rejects use after close, and close is idempotent', async () => {
      const other = await open();
      await other.close();
      await other.close();
      await expect(other.query('SELECT 1')).rejects.toBeInstanceOf(DatabaseClosedError);
      await expect(other.transaction(async () => 1)).rejects.toBeInstanceOf(DatabaseClosedError);
      await expect(other.ping()).rejects.toBeInstanceOf(DatabaseClosedError);
    });
  });
}
