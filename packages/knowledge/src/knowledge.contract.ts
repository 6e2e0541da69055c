import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, type Database } from '@agent-backend/store';
import { ingestDocument } from './ingest.js';
import { KnowledgeRepository } from './knowledge-repository.js';
import { searchChunks, toTsQuery } from './search.js';

const REFUNDS =
  'Refunds are paid within five business days.\n\nShipping takes two weeks to Iceland.';

/**
 * The knowledge repository, ingestion and search against a real database; run by one test file
 * per dialect so that both behave the same.
 */
export function describeKnowledgeContract(name: string, open: () => Promise<Database>): void {
  describe(`knowledge on ${name}`, () => {
    let db: Database;
    let repo: KnowledgeRepository;
    beforeAll(async () => {
      db = await open();
      await migrate(db);
      repo = new KnowledgeRepository(db);
    });
    afterAll(async () => {
      await db.close();
    });

    async function readyDocument(userId: string, baseId: string, content: string, type = 'text') {
      const doc = await repo.addDocument(userId, baseId, {
        name: 'faq.md',
        type: type as 'text',
        content,
      });
      if (!doc) throw new Error('base not found');
      expect(doc.status).toBe('pending');
      expect(await ingestDocument(repo, userId, doc.id)).toMatchObject({ status: 'ready' });
      return doc;
    }

    it('creates, lists and deletes bases of their owner only', async () => {
      const a = await repo.createBase('alice', 'Handbook', 'HR');
      expect(a).toMatchObject({ name: 'Handbook', description: 'HR' });
      expect(a.id).toMatch(/^kb_/);
      expect(await repo.listBases('alice')).toEqual([a]);
      expect(await repo.listBases('bob')).toEqual([]);
      expect(await repo.getBase('bob', a.id)).toBeUndefined();
      expect(await repo.deleteBase('bob', a.id)).toBe(false);
      expect(await repo.deleteBase('alice', a.id)).toBe(true);
      expect(await repo.listBases('alice')).toEqual([]);
    });

    it('ingests a document into ordered chunks and finds them by rank', async () => {
      const base = await repo.createBase('carol', 'FAQ');
      const long = `${'Filler sentence about nothing. '.repeat(60)}\n\n${REFUNDS}`;
      const doc = await readyDocument('carol', base.id, long);
      const [listed] = (await repo.listDocuments('carol', base.id)) ?? [];
      expect(listed).toMatchObject({ id: doc.id, status: 'ready', error: null });
      expect(listed!.chunk_count).toBeGreaterThan(1);

      const hits = await searchChunks(db, {
        userId: 'carol',
        knowledgeBaseIds: [base.id],
        query: 'How many days until refunds are paid?',
      });
      expect(hits.length).toBeGreaterThan(0);
      expect(hits[0]).toMatchObject({
        knowledge_base_id: base.id,
        document_id: doc.id,
        document_name: 'faq.md',
        chunk_index: listed!.chunk_count - 1,
      });
      expect(hits[0]!.content).toContain('Refunds are paid');
      expect(hits[0]!.score).toBeGreaterThan(0);
      for (let i = 1; i < hits.length; i++) {
        expect(hits[i]!.score).toBeLessThanOrEqual(hits[i - 1]!.score);
      }
    });

    it('stores the same chunks once when ingestion runs twice', async () => {
      const base = await repo.createBase('dave', 'Twice');
      const doc = await readyDocument('dave', base.id, REFUNDS);
      expect(await ingestDocument(repo, 'dave', doc.id)).toMatchObject({ status: 'ready' });
      const { rows } = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM knowledge_chunks WHERE document_id = $1',
        [doc.id],
      );
      expect(rows[0]!.n).toBe((await repo.getDocument('dave', doc.id))!.chunk_count);
    });

    it("never searches another user's base, and pending documents are not searched", async () => {
      const base = await repo.createBase('erin', 'Private');
      await readyDocument('erin', base.id, REFUNDS);
      const query = { knowledgeBaseIds: [base.id], query: 'refunds' };
      expect(await searchChunks(db, { ...query, userId: 'mallory' })).toEqual([]);
      expect(
        await repo.addDocument('mallory', base.id, { name: 'x', type: 'text', content: 'x' }),
      ).toBeUndefined();
      expect(await repo.listDocuments('mallory', base.id)).toBeUndefined();
      expect(
        await repo.getDocument('mallory', (await repo.listDocuments('erin', base.id))![0]!.id),
      ).toBeUndefined();

      const other = await repo.createBase('erin', 'Other');
      await repo.addDocument('erin', other.id, { name: 'p', type: 'text', content: 'refunds' });
      const hits = await searchChunks(db, { ...query, userId: 'erin' });
      expect(hits.map((h) => h.knowledge_base_id)).toEqual([base.id]);
      const otherHits = await searchChunks(db, {
        userId: 'erin',
        knowledgeBaseIds: [other.id],
        query: 'refunds',
      });
      expect(otherHits).toEqual([]);
    });

    it('removes the chunks of a deleted document or base from search', async () => {
      const base = await repo.createBase('frank', 'Gone');
      const doc = await readyDocument('frank', base.id, REFUNDS);
      const search = () =>
        searchChunks(db, { userId: 'frank', knowledgeBaseIds: [base.id], query: 'iceland' });
      expect(await search()).toHaveLength(1);
      expect(await repo.deleteDocument('mallory', base.id, doc.id)).toBe(false);
      expect(await repo.deleteDocument('frank', base.id, doc.id)).toBe(true);
      expect(await search()).toEqual([]);
      expect(await ingestDocument(repo, 'frank', doc.id)).toEqual({ status: 'missing' });

      await readyDocument('frank', base.id, REFUNDS);
      expect(await search()).toHaveLength(1);
      await repo.deleteBase('frank', base.id);
      expect(await search()).toEqual([]);
      const { rows } = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM knowledge_chunks WHERE knowledge_base_id = $1',
        [base.id],
      );
      expect(rows[0]!.n).toBe(0);
    });

    it('treats query text as words, never as tsquery syntax', async () => {
      const base = await repo.createBase('gina', 'Syntax');
      await readyDocument('gina', base.id, 'Shipping to Iceland & Norway', 'markdown');
      const hits = await searchChunks(db, {
        userId: 'gina',
        knowledgeBaseIds: [base.id],
        query: "iceland' & !(:* | <->",
      });
      expect(hits).toHaveLength(1);
      expect(
        await searchChunks(db, { userId: 'gina', knowledgeBaseIds: [base.id], query: '&|!' }),
      ).toEqual([]);
    });
  });
}

describe('toTsQuery', () => {
  it('quotes distinct lower-cased words joined by OR', () => {
    expect(toTsQuery("Refund's policy, REFUND!")).toBe("'refund' | 's' | 'policy'");
    expect(toTsQuery('  ?! ')).toBeUndefined();
  });
});
