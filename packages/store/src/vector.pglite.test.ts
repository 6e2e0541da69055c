import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from './database.js';
import { migrate } from './migrations.js';
import { createPgliteDatabase } from './pglite.js';
import { prepareVectorSearch, vectorSupport } from './vector.js';

describe('prepareVectorSearch', () => {
  let db: Database;
  beforeAll(async () => {
    db = await createPgliteDatabase();
    await migrate(db);
  });
  afterAll(async () => {
    await db.close();
  });

  const stored = async () =>
    (
      await db.query<{ v: string }>(
        `SELECT embedding::text AS v FROM knowledge_chunks WHERE document_id = 'doc_1'`,
      )
    ).rows[0]?.v;
  const storedMemory = async () =>
    (await db.query<{ v: string }>(`SELECT embedding::text AS v FROM memories`)).rows[0]?.v;

  it('converts stored embeddings between real[] and vector without losing them', async () => {
    expect(await prepareVectorSearch(db, 'off')).toEqual({
      kind: 'array',
      reason: 'KNOWLEDGE_PGVECTOR=off',
    });
    await db.query(`INSERT INTO knowledge_bases (knowledge_base_id, user_id, name)
      VALUES ('kb_1', 'u', 'b')`);
    await db.query(`INSERT INTO knowledge_documents
      (document_id, knowledge_base_id, user_id, name, type, content, status)
      VALUES ('doc_1', 'kb_1', 'u', 'd', 'text', 'x', 'ready')`);
    await db.query(`INSERT INTO knowledge_chunks
      (document_id, chunk_index, knowledge_base_id, user_id, content, embedding, embedding_model)
      VALUES ('doc_1', 0, 'kb_1', 'u', 'x', '{0.6,0.8}', 'm')`);
    await db.query(`INSERT INTO memories (memory_id, user_id, content, content_key, embedding)
      VALUES ('mem_1', 'u', 'x', 'k', '{0.8,0.6}')`);
    expect(await stored()).toBe('{0.6,0.8}');
    expect(await storedMemory()).toBe('{0.8,0.6}');

    const support = await prepareVectorSearch(db, 'auto');
    expect(support).toMatchObject({ kind: 'pgvector', schema: 'public' });
    expect(await vectorSupport(db)).toEqual(support);
    expect(await vectorSupport(db, 'memories')).toEqual(support);
    expect(await stored()).toBe('[0.6,0.8]');
    expect(await storedMemory()).toBe('[0.8,0.6]');

    await prepareVectorSearch(db, 'off');
    expect((await vectorSupport(db)).kind).toBe('array');
    expect((await vectorSupport(db, 'memories')).kind).toBe('array');
    expect(await stored()).toBe('{0.6,0.8}');
    expect(await storedMemory()).toBe('{0.8,0.6}');
  });

  it('keeps real[] where the extension is not available', async () => {
    const plain = await createPgliteDatabase({ vector: false });
    try {
      await migrate(plain);
      expect(await prepareVectorSearch(plain, 'auto')).toEqual({
        kind: 'array',
        reason: 'the pgvector extension is not available on this server',
      });
    } finally {
      await plain.close();
    }
  });
});
