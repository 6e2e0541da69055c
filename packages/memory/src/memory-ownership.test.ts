/**
 * No code path reads or writes memories without an owner: every statement of this package on
 * the `memories` table filters by `user_id` (its WHERE starts with `user_id = $1`; an insert
 * writes `$1` as the owner), checked twice: in the source (every statement,
 * whether a test reaches it or not) and on the wire (every statement each method sends, with
 * the user it was called for as `$1`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createPgliteDatabase,
  migrate,
  prepareVectorSearch,
  type Database,
  type Queryable,
} from '@agent-backend/store';
import { MemoryRepository } from './memory-repository.js';
import { memoryPromptSection } from './prompt-section.js';

const TOUCHES_MEMORIES = /\b(FROM|UPDATE|INTO|JOIN)\s+memories\b/i;
/** A read, update or delete filters by the owner; an insert writes the owner given as `$1`. */
const owned = (sql: string) =>
  /^\W*INSERT\b/i.test(sql)
    ? /INSERT INTO memories[^(]*\(\s*user_id\b[^)]*\)\s*VALUES\s*\(\s*\$1\b/i.test(sql)
    : /\bWHERE\s+(m\.)?user_id = \$1\b/.test(sql);

describe('statements on memories', () => {
  it('name user_id in every statement of the source', () => {
    const dir = fileURLToPath(new URL('.', import.meta.url));
    const sources = readdirSync(dir).filter(
      (f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.endsWith('.contract.ts'),
    );
    const statements: Array<[string, string]> = [];
    for (const file of sources) {
      const text = readFileSync(`${dir}/${file}`, 'utf8');
      for (const [literal] of text.matchAll(/`[^`]*`|'[^'\n]*'/g)) {
        if (TOUCHES_MEMORIES.test(literal)) statements.push([file, literal]);
      }
    }
    expect(statements.length).toBeGreaterThanOrEqual(10);
    const unowned = statements.filter(([, sql]) => !owned(sql.slice(1)));
    expect(unowned).toEqual([]);
  });

  describe('as sent', () => {
    let db: Database;
    const sent: Array<{ sql: string; params: readonly unknown[] }> = [];
    beforeAll(async () => {
      db = await createPgliteDatabase();
      await migrate(db);
      await prepareVectorSearch(db);
    });
    afterAll(async () => {
      await db?.close();
    });

    /** The database, recording every statement sent through it or its transactions. */
    function recording(inner: Database): Database {
      const record = (q: Queryable): Queryable => ({
        query(sql, params) {
          sent.push({ sql, params: params ?? [] });
          return q.query(sql, params);
        },
      });
      return {
        ...record(inner),
        dialect: inner.dialect,
        transaction: (fn) => inner.transaction((tx) => fn(record(tx))),
        ping: () => inner.ping(),
        close: () => inner.close(),
      } as Database;
    }

    it('carry the caller as $1 in every statement of every method', async () => {
      const repo = new MemoryRepository(recording(db));
      const { memory } = await repo.save('olive', { text: 'Olive collects stamps.' });
      await repo.save('olive', { text: 'Olive collects old stamps' });
      await repo.save('olive', { text: 'Olive is learning Greek.' });
      const page = await repo.list('olive', { limit: 1, q: 'olive' });
      await repo.list('olive', { cursor: page.next_cursor! });
      await repo.get('olive', memory.id);
      await repo.search('olive', 'the stamps');
      await repo.recent('olive', 3);
      await memoryPromptSection(repo, 'olive', 'stamps');
      await repo.delete('olive', memory.id);
      await repo.deleteAll('olive');
      const onMemories = sent.filter((s) => TOUCHES_MEMORIES.test(s.sql));
      expect(onMemories.length).toBeGreaterThanOrEqual(12);
      for (const { sql, params } of onMemories) {
        expect(owned(sql), sql).toBe(true);
        expect(params[0]).toBe('olive');
      }
    });
  });
});
