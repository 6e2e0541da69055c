import { expect, it } from 'vitest';
import { prepareVectorSearch, vectorSupport } from '@agent-backend/store';
import { createOpenAiEmbedder } from '@agent-backend/search';
import { ingestDocument } from './ingest.js';
import { searchChunks } from './search.js';
import { knowledgeSearcher } from './search-tool.js';
import { CARS, SHOP, type KnowledgeContract } from './knowledge-context.contract.js';

/** Embeddings: storage, batching, search by meaning, hybrid ranking, failures of the endpoint. */
export function describeKnowledgeEmbeddings(k: KnowledgeContract): void {
  const { embeddedDocument } = k;
  it('stores embeddings in the column type this database supports', async () => {
    expect((await vectorSupport(k.db)).kind).toBe(k.options.expectVector);
    // Settling again changes nothing (every replica runs it at start).
    expect((await prepareVectorSearch(k.db, k.options.vectorMode)).kind).toBe(
      k.options.expectVector,
    );
  });

  it('embeds every chunk through the embeddings endpoint, in batches', async () => {
    const base = await k.repo.createBase('hank', 'Fleet');
    const before = k.endpoint.requests('concepts-1').length;
    const long = Array.from({ length: 8 }, (_, i) => `Paragraph ${i}. ${CARS}`).join('\n\n');
    const content = `${long}\n\n${'word '.repeat(1500)}`;
    const doc = await embeddedDocument('hank', base.id, content);
    const { rows } = await k.db.query<{ n: number; embedded: number; model: string }>(
      `SELECT count(*)::int AS n, count(embedding)::int AS embedded, max(embedding_model) AS model
       FROM knowledge_chunks WHERE document_id = $1`,
      [doc.id],
    );
    expect(rows[0]!.n).toBeGreaterThan(3);
    expect(rows[0]).toMatchObject({ embedded: rows[0]!.n, model: 'concepts-1' });
    const requests = k.endpoint.requests('concepts-1').slice(before);
    expect(requests).toHaveLength(Math.ceil(rows[0]!.n / 3));
    expect(requests.every((r) => r.body.encoding_format === 'float')).toBe(true);
  });

  it('finds a passage by meaning when it shares no word with the query', async () => {
    const base = await k.repo.createBase('ivan', 'Fleet');
    const doc = await embeddedDocument('ivan', base.id, `${SHOP}\n\n${CARS}`);
    const search = knowledgeSearcher(k.db, { embedder: k.embedder });
    const query = 'automobile upkeep';
    const lexicalOnly = await searchChunks(k.db, {
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
    const base = await k.repo.createBase('judy', 'Mixed');
    const content = [
      'The workshop schedule is printed monthly.', // words only
      CARS, // words ("workshop") and meaning
      'Automobile upkeep costs are listed in the annex.', // meaning only
    ].join('\n\n');
    // One chunk per paragraph: the three are shorter than a chunk together, so split them.
    const parts = content.split('\n\n');
    const docs = [];
    for (const part of parts) docs.push(await embeddedDocument('judy', base.id, part));
    const search = knowledgeSearcher(k.db, { embedder: k.embedder });
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
    const base = await k.repo.createBase('kate', 'Models');
    const doc = await embeddedDocument('kate', base.id, CARS);
    const other = createOpenAiEmbedder({ baseUrl: k.endpoint.baseUrl, model: 'concepts-2' });
    const query = { userId: 'kate', knowledgeBaseIds: [base.id], query: 'automobile upkeep' };
    expect(await knowledgeSearcher(k.db, { embedder: other })(query)).toEqual([]);
    expect(await knowledgeSearcher(k.db, { embedder: k.embedder })(query)).toHaveLength(1);
    expect(await k.repo.deleteDocument('kate', base.id, doc.id)).toBe(true);
    expect(await knowledgeSearcher(k.db, { embedder: k.embedder })(query)).toEqual([]);
  });

  it('retries an embeddings endpoint that is down, and fails the document on the last try', async () => {
    const base = await k.repo.createBase('liam', 'Down');
    const doc = (await k.repo.addDocument('liam', base.id, {
      name: 'a',
      type: 'text',
      content: CARS,
    }))!;
    const down = createOpenAiEmbedder({
      baseUrl: k.endpoint.baseUrl,
      model: 'down-1',
      maxRetries: 0,
    });
    k.endpoint.scriptEmbeddings('down-1', [
      { kind: 'error', status: 503, message: 'overloaded' },
      { kind: 'error', status: 503, message: 'overloaded' },
    ]);
    await expect(
      ingestDocument(k.repo, 'liam', doc.id, { embedder: down, lastAttempt: false }),
    ).rejects.toMatchObject({ name: 'EmbeddingError', retryable: true });
    expect((await k.repo.getDocument('liam', doc.id))!.status).toBe('pending');
    const last = await ingestDocument(k.repo, 'liam', doc.id, {
      embedder: down,
      lastAttempt: true,
    });
    expect(last).toEqual({ status: 'failed', error: expect.stringContaining('503') });
    expect(await k.repo.getDocument('liam', doc.id)).toMatchObject({
      status: 'failed',
      error: expect.stringContaining('overloaded'),
    });
    // Once the k.endpoint answers again, the same job makes it ready.
    expect(
      await ingestDocument(k.repo, 'liam', doc.id, { embedder: down, lastAttempt: false }),
    ).toMatchObject({ status: 'ready', embedded: true });
  });

  it('fails a document at once when the endpoint refuses its texts', async () => {
    const base = await k.repo.createBase('mia', 'Refused');
    const doc = (await k.repo.addDocument('mia', base.id, {
      name: 'a',
      type: 'text',
      content: CARS,
    }))!;
    const refusing = createOpenAiEmbedder({ baseUrl: k.endpoint.baseUrl, model: 'refuse-1' });
    k.endpoint.scriptEmbeddings('refuse-1', [
      { kind: 'error', status: 400, message: 'input too long' },
    ]);
    expect(
      await ingestDocument(k.repo, 'mia', doc.id, { embedder: refusing, lastAttempt: false }),
    ).toEqual({ status: 'failed', error: expect.stringContaining('input too long') });
  });
}
