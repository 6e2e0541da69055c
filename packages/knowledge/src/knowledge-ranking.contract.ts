import { expect, it } from 'vitest';
import { createOpenAiEmbedder, EmbeddingError } from '@agent-backend/search';
import { ingestDocument } from './ingest.js';
import { searchChunks } from './search.js';
import { knowledgeSearcher } from './search-tool.js';
import { CARS, SHOP, type KnowledgeContract } from './knowledge-context.contract.js';

/** Embedding again, search without pgvector, ranking by word statistics, search by words alone. */
export function describeKnowledgeRanking(k: KnowledgeContract): void {
  const { readyDocument, embeddedDocument } = k;
  it('finds the documents to embed again, and embeds them again without losing them', async () => {
    const base = await k.repo.createBase('pia', 'Models');
    const embedded = await embeddedDocument('pia', base.id, CARS);
    const wordsOnly = await readyDocument('pia', base.id, SHOP);
    const pending = (await k.repo.addDocument('pia', base.id, {
      name: 'p',
      type: 'text',
      content: CARS,
    }))!;
    const ids = async (model: string, dimensions?: number) =>
      (await k.repo.documentsToReembed(model, dimensions)).map((d) => d.document_id);
    const sameModel = await ids('concepts-1');
    expect(sameModel).toContain(wordsOnly.id);
    expect(sameModel).not.toContain(embedded.id);
    expect(sameModel).not.toContain(pending.id);
    expect(await ids('concepts-1', 128)).not.toContain(embedded.id);
    expect(await ids('concepts-1', 64)).toContain(embedded.id);
    expect(await k.repo.documentsToReembed('concepts-2')).toEqual(
      expect.arrayContaining([
        { document_id: embedded.id, user_id: 'pia' },
        { document_id: wordsOnly.id, user_id: 'pia' },
      ]),
    );

    // A refused re-embedding leaves the document ready, with its chunks and vectors.
    const [vector] = await k.embedder.embed(['automobile upkeep']);
    const byMeaning = () =>
      searchChunks(k.db, {
        userId: 'pia',
        knowledgeBaseIds: [base.id],
        query: 'automobile upkeep',
        embedding: { model: 'concepts-1', vector: vector! },
      });
    expect((await byMeaning()).map((h) => h.document_id)).toEqual([embedded.id]);
    const refusing = createOpenAiEmbedder({ baseUrl: k.endpoint.baseUrl, model: 'refuse-2' });
    k.endpoint.scriptEmbeddings('refuse-2', [{ kind: 'error', status: 400, message: 'no' }]);
    const refused = await ingestDocument(k.repo, 'pia', embedded.id, {
      embedder: refusing,
      reembed: true,
    });
    expect(refused).toMatchObject({ status: 'failed' });
    expect(await ingestDocument(k.repo, 'pia', embedded.id, { reembed: true })).toMatchObject({
      status: 'failed',
      error: 'no embeddings endpoint is configured',
    });
    expect(await k.repo.getDocument('pia', embedded.id)).toMatchObject({ status: 'ready' });
    expect((await byMeaning()).map((h) => h.document_id)).toEqual([embedded.id]);
    // Embedded by the new model: no longer to do for it.
    const other = createOpenAiEmbedder({ baseUrl: k.endpoint.baseUrl, model: 'concepts-2' });
    expect(
      await ingestDocument(k.repo, 'pia', wordsOnly.id, { embedder: other, reembed: true }),
    ).toMatchObject({ status: 'ready', embedded: true });
    expect(await ids('concepts-2')).not.toContain(wordsOnly.id);
  });

  it('without pgvector, compares with lexical candidates only past the exact-scan limit', async () => {
    const base = await k.repo.createBase('olga', 'Big');
    const doc = await embeddedDocument('olga', base.id, `${SHOP}\n\n${CARS}`);
    const [vector] = await k.embedder.embed(['automobile upkeep']);
    const search = (query: string, arrayExactMaxChunks = 0) =>
      searchChunks(k.db, {
        userId: 'olga',
        knowledgeBaseIds: [base.id],
        query,
        embedding: { model: 'concepts-1', vector: vector! },
        arrayExactMaxChunks,
      });
    // The base has one chunk: at a limit of one the comparison is still exact.
    expect(await k.repo.getDocument('olga', doc.id)).toMatchObject({ chunk_count: 1 });
    expect(await search('automobile upkeep', 1)).toHaveLength(1);
    // pgvector compares with every chunk whatever the size; plain SQL past the limit only
    // with chunks that share a word with the query.
    expect(await search('automobile upkeep')).toHaveLength(
      k.options.expectVector === 'pgvector' ? 1 : 0,
    );
    const hits = await search('workshop');
    expect(hits.map((h) => h.document_id)).toEqual([doc.id]);
  });

  it('ranks the chunks with an informative word first once statistics name the common words', async () => {
    const base = await k.repo.createBase('quinn', 'Stop words');
    // "the" must be in at least COMMON_WORD_SHARE of all chunks of the table.
    const { rows } = await k.db.query<{ n: number }>(
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
    await k.db.query('ANALYZE knowledge_chunks');
    // A new handle: the common words are read from the statistics once per handle and 5 min.
    const handle = { query: k.db.query.bind(k.db) } as typeof k.db;
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
    const base = await k.repo.createBase('noah', 'Fallback');
    await embeddedDocument('noah', base.id, `${SHOP}\n\n${CARS}`);
    const flaky = createOpenAiEmbedder({
      baseUrl: k.endpoint.baseUrl,
      model: 'concepts-1',
      maxRetries: 0,
    });
    k.endpoint.scriptEmbeddings('concepts-1', [{ kind: 'error', status: 500, message: 'boom' }]);
    const errors: unknown[] = [];
    const search = knowledgeSearcher(k.db, {
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
}
