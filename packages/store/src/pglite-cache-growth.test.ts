import { mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPgliteDatabase, type Database, type PgliteCacheChange } from './index.js';

const MIB = 2 ** 20;
const dirs: string[] = [];
const temp = () => {
  const dir = mkdtempSync(join(tmpdir(), 'pglite-cache-'));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * The data grows by `mb`: a sparse file in a folder of `base/` that PostgreSQL does not read,
 * which the sizing counts as a database of that size.
 */
function grow(dataDir: string, mb: number): void {
  const dir = join(dataDir, 'base', 'growth-probe');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'filler'), '');
  truncateSync(join(dir, 'filler'), mb * MIB);
}

const cacheOf = async (db: Database) =>
  (await db.query<{ s: string }>(`SELECT current_setting('shared_buffers') AS s`)).rows[0]?.s;

describe('the database thread grows the page cache with the data', () => {
  it('reopens PGlite with the larger cache once no transaction is open, losing no statement', async () => {
    const dataDir = temp();
    const changes: Array<PgliteCacheChange & { at: number }> = [];
    const db = await createPgliteDatabase({
      dataDir,
      templateDir: false,
      thread: true,
      cacheCheckMs: 50,
      onCacheChange: (change) => changes.push({ ...change, at: Date.now() }),
    });
    try {
      expect(await cacheOf(db)).toBe('16MB');
      await db.query('CREATE TABLE t (n int PRIMARY KEY)');

      // A transaction open longer than a reopen waits for quiet: the cache grows after it.
      let committedAt = 0;
      const held = db.transaction(async (tx) => {
        await tx.query('INSERT INTO t VALUES (0)');
        grow(dataDir, 40);
        await sleep(1_500);
        await tx.query('INSERT INTO t VALUES (1)');
      });
      await held;
      committedAt = Date.now();

      // Statements keep coming while the cache grows: each is answered, in order, once.
      let next = 2;
      const writer = (async () => {
        while (changes.length === 0 || next < 40) {
          await db.query('INSERT INTO t VALUES ($1)', [next]);
          next++;
        }
      })();
      await vi.waitFor(() => expect(changes.length).toBeGreaterThan(0), {
        timeout: 15_000,
        interval: 20,
      });
      await writer;

      expect(changes).toHaveLength(1);
      expect(changes[0]).toMatchObject({ fromMb: 16, toMb: 40 });
      expect(changes[0]!.error).toBeUndefined();
      expect(changes[0]!.at).toBeGreaterThanOrEqual(committedAt);
      expect(await cacheOf(db)).toBe('40MB');
      const { rows } = await db.query<{ n: number }>('SELECT n FROM t ORDER BY n');
      expect(rows.map((r) => r.n)).toEqual(Array.from({ length: next }, (_, i) => i));

      // Grown once: the same data does not reopen it again.
      await sleep(300);
      expect(changes).toHaveLength(1);
    } finally {
      await db.close();
    }
  });

  it('leaves a size the operator fixed as it is', async () => {
    const dataDir = temp();
    const changes: PgliteCacheChange[] = [];
    const db = await createPgliteDatabase({
      dataDir,
      templateDir: false,
      thread: true,
      sharedBuffersMb: 16,
      cacheCheckMs: 50,
      onCacheChange: (change) => changes.push(change),
    });
    try {
      grow(dataDir, 40);
      await sleep(500);
      expect(changes).toEqual([]);
      expect(await cacheOf(db)).toBe('16MB');
    } finally {
      await db.close();
    }
  });
});
