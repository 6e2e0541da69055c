import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  createPgliteDatabase,
  type Database,
  dirLockHolder,
  migrate,
  MIGRATIONS,
  templateFile,
} from './index.js';
import { sharedBuffersForData } from './pglite-open.js';
import { tarWithout } from './tar-filter.js';

/** The embedded settings hold whichever way the database was opened (docs/BENCHMARKS.md). */
async function expectEmbeddedSettings(db: Database): Promise<void> {
  const { rows } = await db.query(
    `SELECT current_setting('shared_buffers') AS shared_buffers, current_setting('wal_buffers') AS wal_buffers`,
  );
  expect(rows).toEqual([{ shared_buffers: '16MB', wal_buffers: '512kB' }]);
}

const temp = (label: string) => mkdtempSync(join(tmpdir(), `${label}-`));
const tarList = (file: string) =>
  execFileSync('tar', ['-tPf', file], { encoding: 'utf8' }).trim().split('\n').sort();

const MIB = 2 ** 20;
/** A file of `bytes` under `dir` that takes no disk space (sparse). */
function sparseFile(dir: string, name: string, bytes: number): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, name), '');
  truncateSync(join(dir, name), bytes);
}

describe('sharedBuffersForData', () => {
  it("gives its largest database's size, in steps of 8 MB, from 16 to 128 MB", () => {
    expect(sharedBuffersForData(undefined)).toBe(16);
    expect(sharedBuffersForData(temp('no-base'))).toBe(16);
    const dir = temp('sized');
    sparseFile(join(dir, 'base', '5'), '16384', 10 * MIB);
    expect(sharedBuffersForData(dir)).toBe(16); // the floor
    sparseFile(join(dir, 'base', '5', 'nested'), '16390', 90 * MIB);
    expect(sharedBuffersForData(dir)).toBe(104); // 100 MB, up to 104
    // Another, smaller database, and what is outside base/ (the WAL), do not count.
    sparseFile(join(dir, 'base', '1'), '1259', 60 * MIB);
    sparseFile(join(dir, 'pg_wal'), '000000010000000000000001', 512 * MIB);
    expect(sharedBuffersForData(dir)).toBe(104);
    sparseFile(join(dir, 'base', '4'), '1259', 900 * MIB);
    expect(sharedBuffersForData(dir)).toBe(128); // the ceiling
  });
});

describe('tarWithout', () => {
  it('drops the named root entries and keeps every other file readable by tar', () => {
    const dir = temp('tar-src');
    mkdirSync(join(dir, 'base'));
    writeFileSync(join(dir, 'PG_VERSION'), '17\n');
    writeFileSync(join(dir, 'pglite.pid'), '12345');
    writeFileSync(join(dir, 'base', 'pglite.pid'), 'not the root one');
    writeFileSync(join(dir, 'base', '1247'), 'x'.repeat(1500));
    const archive = join(temp('tar'), 'a.tar');
    execFileSync('tar', ['--format=ustar', '-cf', archive, '-C', dir, '.']);

    const filtered = join(temp('tar'), 'b.tar');
    writeFileSync(filtered, tarWithout(readFileSync(archive), new Set(['./pglite.pid'])));

    expect(tarList(filtered)).toEqual(
      ['./', './PG_VERSION', './base/', './base/1247', './base/pglite.pid'].sort(),
    );
    const out = temp('tar-out');
    execFileSync('tar', ['-xf', filtered, '-C', out]);
    expect(readFileSync(join(out, 'base', '1247'), 'utf8')).toBe('x'.repeat(1500));
  });
});

// initdb and several opens of PostgreSQL in WebAssembly: long on a busy 2-core machine.
describe('PGlite from the cached initdb template', { timeout: 180_000 }, () => {
  it('makes the template on the first new database and starts later ones from it', async () => {
    const templateDir = temp('pglite-template');
    const firstDir = temp('pglite-first');
    const first = await createPgliteDatabase({ dataDir: firstDir, templateDir, thread: true });
    expect(first.origin).toBe('initdb');
    await expectEmbeddedSettings(first);
    await first.close();
    const template = templateFile(templateDir);
    // Our lock file is not part of it: a copy would carry the creator's pid into new directories.
    expect(tarList(template)).toContain('/PG_VERSION');
    expect(tarList(template).filter((path) => path.endsWith('pglite.pid'))).toEqual([]);

    const dataDir = temp('pglite-second');
    const second = await createPgliteDatabase({ dataDir, templateDir, thread: true });
    expect(second.origin).toBe('template');
    await expectEmbeddedSettings(second);
    expect(dirLockHolder(dataDir)).toBe(process.pid);
    expect(await migrate(second)).toHaveLength(MIGRATIONS.length);
    await second.query(
      `INSERT INTO refresh_tokens (token_hash, user_id, expires_at) VALUES ('h', 'u', now())`,
    );
    await second.close();

    const reopened = await createPgliteDatabase({ dataDir, templateDir });
    expect(reopened.origin).toBe('existing');
    await expectEmbeddedSettings(reopened);
    expect(await migrate(reopened)).toEqual([]);
    expect((await reopened.query('SELECT user_id FROM refresh_tokens')).rows).toEqual([
      { user_id: 'u' },
    ]);
    await reopened.close();

    const inMemory = await createPgliteDatabase({ templateDir });
    expect(inMemory.origin).toBe('template');
    expect(await migrate(inMemory)).toHaveLength(MIGRATIONS.length);
    await inMemory.close();

    // A database that holds more data is given more buffers when it is opened again, on the
    // thread as the service opens it (here a folder of 100 MB that PostgreSQL does not read).
    sparseFile(join(dataDir, 'base', 'sizing-probe'), 'filler', 100 * MIB);
    expect(sharedBuffersForData(dataDir)).toBe(104);
    const grown = await createPgliteDatabase({ dataDir, templateDir, thread: true });
    expect((await grown.query(`SELECT current_setting('shared_buffers') AS s`)).rows).toEqual([
      { s: `${sharedBuffersForData(dataDir)}MB` },
    ]);
    expect(grown.sharedBuffersMb).toBe(104);
    await grown.close();

    // PGLITE_SHARED_BUFFERS_MB: another size, on the thread as the service opens it, and here.
    for (const thread of [true, false]) {
      const sized = await createPgliteDatabase({ templateDir, thread, sharedBuffersMb: 48 });
      const { rows } = await sized.query(
        `SELECT current_setting('shared_buffers') AS shared_buffers`,
      );
      expect(rows).toEqual([{ shared_buffers: '48MB' }]);
      expect(sized.sharedBuffersMb).toBe(48);
      await sized.close();
    }
  });

  it('replaces a damaged template by running initdb', async () => {
    const templateDir = temp('pglite-template');
    mkdirSync(templateDir, { recursive: true });
    writeFileSync(templateFile(templateDir), 'not a tar archive');
    const dataDir = temp('pglite-damaged');
    const db = await createPgliteDatabase({ dataDir, templateDir });
    expect(db.origin).toBe('initdb');
    expect(dirLockHolder(dataDir)).toBe(process.pid);
    expect(await migrate(db)).toHaveLength(MIGRATIONS.length);
    await db.close();
    expect(tarList(templateFile(templateDir))).toContain('/PG_VERSION');
  });

  it('runs initdb every time when the template is off', async () => {
    const db = await createPgliteDatabase({ templateDir: false });
    expect(db.origin).toBe('initdb');
    await db.close();
    expect(existsSync(templateFile(join(tmpdir(), 'never-written')))).toBe(false);
  });
});
