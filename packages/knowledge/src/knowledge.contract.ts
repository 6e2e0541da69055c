import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  migrate,
  prepareVectorSearch,
  vectorSupport,
  type Database,
  type VectorMode,
} from '@agent-backend/store';
import { conceptEmbedding, startScriptedModel, type ScriptedModel } from '@agent-backend/testing';
import { createOpenAiEmbedder, EmbeddingError, type Embedder } from '@agent-backend/search';
import { ingestDocument } from './ingest.js';
import { KnowledgeRepository } from './knowledge-repository.js';
import { searchChunks } from './search.js';
import { knowledgeSearcher } from './search-tool.js';

const REFUNDS =
  'Refunds are paid within five business days.\n\nShipping takes two weeks to Iceland.';

export interface KnowledgeContractOptions {
  /** Passed to prepareVectorSearch. @default 'auto' */
  readonly vectorMode?: VectorMode;
  /** How embeddings must end up stored on this database. */
  readonly expectVector: 'pgvector' | 'array';
}

/**
 * The knowledge repository, ingestion and search against a real database; run by one test file
 * per dialect and vector storage so that all behave the same.
 */
export function describeKnowledgeContract(
  name: string,
  open: () => Promise<Database>,
  options: KnowledgeContractOptions,
): void {
  describe(`knowledge on ${name}`, () => {
    let db: Database;
    let repo: KnowledgeRepository;
    let endpoint: ScriptedModel;
    let embedder: Embedder;
    beforeAll(async () => {
      db = await open();
      await migrate(db);
      await prepareVectorSearch(db, options.vectorMode);
      repo = new KnowledgeRepository(db);
      endpoint = await startScriptedModel({ embed: (text) => conceptEmbedding(text) });
      embedder = createOpenAiEmbedder({
        baseUrl: endpoint.baseUrl,
        model: 'concepts-1',
        batchSize: 3,
        maxRetries: 0,
      });
    });
    afterAll(async () => {
      await db?.close();
      await endpoint?.close();
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

    it('ingests HTML as the text a reader sees', async () => {
      const base = await repo.createBase('hugo', 'Pages');
      const html = `<html><head><title>Fleet</title><script>const zebra = 1;</script></head>
        <body><h1>Servicing</h1><p>Our cars are serviced every <em>spring</em>.</p>
        <style>.quokka { display: none }</style><p>Tyres &amp; brakes too.</p></body></html>`;
      const doc = await readyDocument('hugo', base.id, html, 'html');
      const search = (query: string) =>
        searchChunks(db, { userId: 'hugo', knowledgeBaseIds: [base.id], query });
      const [hit] = await search('spring tyres');
      expect(hit).toMatchObject({ document_id: doc.id, chunk_index: 0 });
      expect(hit!.content).toBe(
        'Fleet\n\nServicing\n\nOur cars are serviced every spring.\n\nTyres & brakes too.',
      );
      expect(await search('zebra quokka html body')).toEqual([]);
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

    it('stores embeddings in the column type this database supports', async () => {
      expect((await vectorSupport(db)).kind).toBe(options.expectVector);
      // Settling again changes nothing (every replica runs it at start).
      expect((await prepareVectorSearch(db, options.vectorMode)).kind).toBe(options.expectVector);
    });

    const CARS = 'Our cars are serviced every spring by the workshop.';
    const SHOP = 'The shop opens at nine and closes at five on weekdays.';

    async function embeddedDocument(userId: string, baseId: string, content: string) {
      const doc = await repo.addDocument(userId, baseId, {
        name: 'fleet.md',
        type: 'text',
        content,
      });
      const outcome = await ingestDocument(repo, userId, doc!.id, { embedder });
      expect(outcome).toEqual({ status: 'ready', chunks: expect.any(Number), embedded: true });
      return doc!;
    }

    it('embeds every chunk through the embeddings endpoint, in batches', async () => {
      const base = await repo.createBase('hank', 'Fleet');
      const before = endpoint.requests('concepts-1').length;
      const long = Array.from({ length: 8 }, (_, i) => `Paragraph ${i}. ${CARS}`).join('\n\n');
      const content = `${long}\n\n${'word '.repeat(1500)}`;
      const doc = await embeddedDocument('hank', base.id, content);
      const { rows } = await db.query<{ n: number; embedded: number; model: string }>(
        `SELECT count(*)::int AS n, count(embedding)::int AS embedded, max(embedding_model) AS model
         FROM knowledge_chunks WHERE document_id = $1`,
        [doc.id],
      );
      expect(rows[0]!.n).toBeGreaterThan(3);
      expect(rows[0]).toMatchObject({ embedded: rows[0]!.n, model: 'concepts-1' });
      const requests = endpoint.requests('concepts-1').slice(before);
      expect(requests).toHaveLength(Math.ceil(rows[0]!.n / 3));
      expect(requests.every((r) => r.body.encoding_format === 'float')).toBe(true);
    });

    it('finds a passage by meaning when it shares no word with the query', async () => {
      const base = await repo.createBase('ivan', 'Fleet');
      const doc = await embeddedDocument('ivan', base.id, `${SHOP}\n\n${CARS}`);
      const search = knowledgeSearcher(db, { embedder });
      const query = 'automobile upkeep';
      const lexicalOnly = await searchChunks(db, {
        userId: 'ivan',
        knowledgeBaseIds: [base.id],
        query,
      });
      expect(lexicalOnly).toEqual([]);
      const hits = await search({ userId: 'ivan', knowledgeBaseIds: [base.id], query, limit: 1 });
      expect(hits).toEqual([
        {
          knowledge_base_id: base.id,
          document_id: doc.id,
          document_name: 'fleet.md',
          chunk_index: expect.any(Number),
          content: expect.stringContaining('cars are serviced'),
          score: expect.any(Number),
        },
      ]);
      // Only the token's user: the same search as another user finds nothing.
      expect(
        await search({ userId: 'mallory', knowledgeBaseIds: [base.id], query, limit: 5 }),
      ).toEqual([]);
    });

    it('ranks a passage found by words and by meaning above one found by either', async () => {
      const base = await repo.createBase('judy', 'Mixed');
      const content = [
        'The workshop schedule is printed monthly.', // words only
        CARS, // words ("workshop") and meaning
        'Automobile upkeep costs are listed in the annex.', // meaning only
      ].join('\n\n');
      // One chunk per paragraph: the three are shorter than a chunk together, so split them.
      const parts = content.split('\n\n');
      const docs = [];
      for (const part of parts) docs.push(await embeddedDocument('judy', base.id, part));
      const search = knowledgeSearcher(db, { embedder });
      const hits = await search({
        userId: 'judy',
        knowledgeBaseIds: [base.id],
        query: 'workshop car maintenance',
        limit: 3,
      });
      expect(hits.map((h) => h.document_id)[0]).toBe(docs[1]!.id);
      expect(hits.map((h) => h.document_id).sort()).toEqual(docs.map((d) => d.id).sort());
      for (let i = 1; i < hits.length; i++) {
        expect(hits[i]!.score).toBeLessThanOrEqual(hits[i - 1]!.score);
      }
    });

    it('compares only vectors of the same model, and deleted chunks are gone', async () => {
      const base = await repo.createBase('kate', 'Models');
      const doc = await embeddedDocument('kate', base.id, CARS);
      const other = createOpenAiEmbedder({ baseUrl: endpoint.baseUrl, model: 'concepts-2' });
      const query = { userId: 'kate', knowledgeBaseIds: [base.id], query: 'automobile upkeep' };
      expect(await knowledgeSearcher(db, { embedder: other })(query)).toEqual([]);
      expect(await knowledgeSearcher(db, { embedder })(query)).toHaveLength(1);
      expect(await repo.deleteDocument('kate', base.id, doc.id)).toBe(true);
      expect(await knowledgeSearcher(db, { embedder })(query)).toEqual([]);
    });

    it('retries an embeddings endpoint that is down, and fails the document on the last try', async () => {
      const base = await repo.createBase('liam', 'Down');
      const doc = (await repo.addDocument('liam', base.id, {
        name: 'a',
        type: 'text',
        content: CARS,
      }))!;
      const down = createOpenAiEmbedder({
        baseUrl: endpoint.baseUrl,
        model: 'down-1',
        maxRetries: 0,
      });
      endpoint.scriptEmbeddings('down-1', [
        { kind: 'error', status: 503, message: 'overloaded' },
        { kind: 'error', status: 503, message: 'overloaded' },
      ]);
      await expect(
        ingestDocument(repo, 'liam', doc.id, { embedder: down, lastAttempt: false }),
      ).rejects.toMatchObject({ name: 'EmbeddingError', retryable: true });
      expect((await repo.getDocument('liam', doc.id))!.status).toBe('pending');
      const last = await ingestDocument(repo, 'liam', doc.id, {
        embedder: down,
        lastAttempt: true,
      });
      expect(last).toEqual({ status: 'failed', error: expect.stringContaining('503') });
      expect(await repo.getDocument('liam', doc.id)).toMatchObject({
        status: 'failed',
        error: expect.stringContaining('overloaded'),
      });
      // Once the endpoint answers again, the same job makes it ready.
      expect(
        await ingestDocument(repo, 'liam', doc.id, { embedder: down, lastAttempt: false }),
      ).toMatchObject({ status: 'ready', embedded: true });
    });

    it('fails a document at once when the endpoint refuses its texts', async () => {
      const base = await repo.createBase('mia', 'Refused');
      const doc = (await repo.addDocument('mia', base.id, {
        name: 'a',
        type: 'text',
        content: CARS,
      }))!;
      const refusing = createOpenAiEmbedder({ baseUrl: endpoint.baseUrl, model: 'refuse-1' });
      endpoint.scriptEmbeddings('refuse-1', [
        { kind: 'error', status: 400, message: 'input too long' },
      ]);
      expect(
        await ingestDocument(repo, 'mia', doc.id, { embedder: refusing, lastAttempt: false }),
      ).toEqual({ status: 'failed', error: expect.stringContaining('input too long') });
    });

    it('finds the documents to embed again, and embeds them again without losing them', async () => {
      const base = await repo.createBase('pia', 'Models');
      const embedded = await embeddedDocument('pia', base.id, CARS);
      const wordsOnly = await readyDocument('pia', base.id, SHOP);
      const pending = (await repo.addDocument('pia', base.id, {
        name: 'p',
        type: 'text',
        content: CARS,
      }))!;
      const ids = async (model: string, dimensions?: number) =>
        (await repo.documentsToReembed(model, dimensions)).map((d) => d.document_id);
      const sameModel = await ids('concepts-1');
      expect(sameModel).toContain(wordsOnly.id);
      expect(sameModel).not.toContain(embedded.id);
      expect(sameModel).not.toContain(pending.id);
      expect(await ids('concepts-1', 128)).not.toContain(embedded.id);
      expect(await ids('concepts-1', 64)).toContain(embedded.id);
      expect(await repo.documentsToReembed('concepts-2')).toEqual(
        expect.arrayContaining([
          { document_id: embedded.id, user_id: 'pia' },
          { document_id: wordsOnly.id, user_id: 'pia' },
        ]),
      );

      // A refused re-embedding leaves the document ready, with its chunks and vectors.
      const [vector] = await embedder.embed(['automobile upkeep']);
      const byMeaning = () =>
        searchChunks(db, {
          userId: 'pia',
          knowledgeBaseIds: [base.id],
          query: 'automobile upkeep',
          embedding: { model: 'concepts-1', vector: vector! },
        });
      expect((await byMeaning()).map((h) => h.document_id)).toEqual([embedded.id]);
      const refusing = createOpenAiEmbedder({ baseUrl: endpoint.baseUrl, model: 'refuse-2' });
      endpoint.scriptEmbeddings('refuse-2', [{ kind: 'error', status: 400, message: 'no' }]);
      const refused = await ingestDocument(repo, 'pia', embedded.id, {
        embedder: refusing,
        reembed: true,
      });
      expect(refused).toMatchObject({ status: 'failed' });
      expect(await ingestDocument(repo, 'pia', embedded.id, { reembed: true })).toMatchObject({
        status: 'failed',
        error: 'no embeddings endpoint is configured',
      });
      expect(await repo.getDocument('pia', embedded.id)).toMatchObject({ status: 'ready' });
      expect((await byMeaning()).map((h) => h.document_id)).toEqual([embedded.id]);
      // Embedded by the new model: no longer to do for it.
      const other = createOpenAiEmbedder({ baseUrl: endpoint.baseUrl, model: 'concepts-2' });
      expect(
        await ingestDocument(repo, 'pia', wordsOnly.id, { embedder: other, reembed: true }),
      ).toMatchObject({ status: 'ready', embedded: true });
      expect(await ids('concepts-2')).not.toContain(wordsOnly.id);
    });

    it('without pgvector, compares with lexical candidates only past the exact-scan limit', async () => {
      const base = await repo.createBase('olga', 'Big');
      const doc = await embeddedDocument('olga', base.id, `${SHOP}\n\n${CARS}`);
      const [vector] = await embedder.embed(['automobile upkeep']);
      const search = (query: string, arrayExactMaxChunks = 0) =>
        searchChunks(db, {
          userId: 'olga',
          knowledgeBaseIds: [base.id],
          query,
          embedding: { model: 'concepts-1', vector: vector! },
          arrayExactMaxChunks,
        });
      // The base has one chunk: at a limit of one the comparison is still exact.
      expect(await repo.getDocument('olga', doc.id)).toMatchObject({ chunk_count: 1 });
      expect(await search('automobile upkeep', 1)).toHaveLength(1);
      // pgvector compares with every chunk whatever the size; plain SQL past the limit only
      // with chunks that share a word with the query.
      expect(await search('automobile upkeep')).toHaveLength(
        options.expectVector === 'pgvector' ? 1 : 0,
      );
      const hits = await search('workshop');
      expect(hits.map((h) => h.document_id)).toEqual([doc.id]);
    });

    it('ranks the chunks with an informative word first once statistics name the common words', async () => {
      const base = await repo.createBase('quinn', 'Stop words');
      // "the" must be in at least COMMON_WORD_SHARE of all chunks of the table.
      const { rows } = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM knowledge_chunks',
      );
      const fillers = Math.max(40, rows[0]!.n);
      const filler = Array.from({ length: fillers }, (_, i) => `${'the '.repeat(200)}cat${i}.`);
      const fillerDoc = await readyDocument('quinn', base.id, filler.join('\n\n'));
      const refundDoc = await readyDocument(
        'quinn',
        base.id,
        'Refund requests are answered by our billing team.',
      );
      await db.query('ANALYZE knowledge_chunks');
      // A new handle: the common words are read from the statistics once per handle and 5 min.
      const handle = { query: db.query.bind(db) } as typeof db;
      const search = (query: string, limit: number) =>
        searchChunks(handle, { userId: 'quinn', knowledgeBaseIds: [base.id], query, limit });

      // By ts_rank alone, 200 × "the" outranks one "refund"; "the" is common, so it only ranks.
      const hits = await search('the refund', 3);
      expect(hits.map((h) => h.document_id)).toEqual([refundDoc.id, fillerDoc.id, fillerDoc.id]);
      expect(hits[0]!.content).toContain('Refund requests');
      // Enough chunks with an informative word: only those are ranked; else the others follow.
      const name = (h: { content: string }) => h.content.match(/cat\d+/)![0];
      expect((await search('the cat7 cat8', 2)).map(name).sort()).toEqual(['cat7', 'cat8']);
      const five = await search('the cat7 cat8', 5);
      expect(five.slice(0, 2).map(name).sort()).toEqual(['cat7', 'cat8']);
      expect(five.slice(2).map(name)).not.toContain('cat7');
      // Only common words: every chunk with them is ranked, as before any statistics.
      expect(await search('the', 4)).toHaveLength(4);
    });

    it('searches by words alone when the query cannot be embedded', async () => {
      const base = await repo.createBase('noah', 'Fallback');
      await embeddedDocument('noah', base.id, `${SHOP}\n\n${CARS}`);
      const flaky = createOpenAiEmbedder({
        baseUrl: endpoint.baseUrl,
        model: 'concepts-1',
        maxRetries: 0,
      });
      endpoint.scriptEmbeddings('concepts-1', [{ kind: 'error', status: 500, message: 'boom' }]);
      const errors: unknown[] = [];
      const search = knowledgeSearcher(db, {
        embedder: flaky,
        onEmbeddingError: (e) => errors.push(e),
      });
      const hits = await search({
        userId: 'noah',
        knowledgeBaseIds: [base.id],
        query: 'shop opens',
      });
      expect(hits).toHaveLength(1);
      expect(hits[0]!.content).toContain('The shop opens');
      expect(errors).toEqual([expect.any(EmbeddingError)]);
    });
  });
}
