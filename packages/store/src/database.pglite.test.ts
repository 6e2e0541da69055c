import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
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
