import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { proseText } from '@agent-backend/testing';
import { describeDatabaseContract } from './database.contract.js';
import { createPgliteDatabase, DataDirInUseError, dirLockHolder, migrate } from './index.js';

describeDatabaseContract('PGlite', () => createPgliteDatabase());

describe('PGlite data directory', () => {
  it('keeps data across a reopen and refuses a second opener while held', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'pglite-'));
    const first = await createPgliteDatabase({ dataDir });
    await migrate(first);
    await first.query(
      `INSERT INTO refresh_tokens (token_hash, user_id, expires_at) VALUES ('h', 'u', now())`,
    );
    expect(dirLockHolder(dataDir)).toBe(process.pid);
    await expect(createPgliteDatabase({ dataDir })).rejects.toBeInstanceOf(DataDirInUseError);
    await first.close();
    expect(dirLockHolder(dataDir)).toBeUndefined();

    const second = await createPgliteDatabase({ dataDir });
    const { rows } = await second.query('SELECT user_id FROM refresh_tokens');
    expect(rows).toEqual([{ user_id: 'u' }]);
    await second.close();
  });
});

describeDatabaseContract('PGlite on its own thread', () => createPgliteDatabase({ thread: true }));

describe('PGlite on its own thread', () => {
  it('keeps driver error fields and keeps its data directory across a reopen', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'pglite-thread-'));
    const first = await createPgliteDatabase({ dataDir, thread: true });
    await migrate(first);
    await first.query(
      `INSERT INTO refresh_tokens (token_hash, user_id, expires_at) VALUES ('h', 'u', now())`,
    );
    const duplicate = first.query(
      `INSERT INTO refresh_tokens (token_hash, user_id, expires_at) VALUES ('h', 'u', now())`,
    );
    await expect(duplicate).rejects.toMatchObject({ code: '23505' });
    await expect(createPgliteDatabase({ dataDir, thread: true })).rejects.toBeInstanceOf(
      DataDirInUseError,
    );
    await first.close();
    await expect(first.query('SELECT 1')).rejects.toThrow(/closed/);

    const second = await createPgliteDatabase({ dataDir, thread: true });
    const { rows } = await second.query<{ user_id: string; expires_at: Date }>(
      'SELECT user_id, expires_at FROM refresh_tokens',
    );
    expect(rows.map((r) => r.user_id)).toEqual(['u']);
    expect(rows[0]!.expires_at).toBeInstanceOf(Date);
    await second.close();
  });

  it('leaves this thread free while a statement writes and reads a 10 MB row', async () => {
    const db = await createPgliteDatabase({ thread: true });
    await db.query('CREATE TABLE big (id int, body text)');
    const body = proseText(10_000_000);
    // Turns of this thread's event loop while the big statements run: on PGlite's own thread
    // they keep coming; in this thread, the statements would be one long gap between two turns.
    const turns: number[] = [];
    let spinning = true;
    const started = performance.now();
    const spin = (async () => {
      while (spinning) {
        turns.push(performance.now());
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    await db.query('INSERT INTO big VALUES (1, $1)', [body]);
    const { rows } = await db.query<{ n: number; b: string }>(
      'SELECT length(body) AS n, body AS b FROM big',
    );
    const ended = performance.now();
    spinning = false;
    await spin;
    expect(rows[0]!.n).toBe(body.length);
    expect(rows[0]!.b).toBe(body);
    const marks = [started, ...turns.filter((t) => t < ended), ended];
    const total = ended - started;
    const longestGap = marks.slice(1).reduce((gap, t, i) => Math.max(gap, t - marks[i]!), 0);
    expect(longestGap).toBeLessThan(total / 2);
    await db.close();
  });
});
