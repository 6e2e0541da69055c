import { expect, it } from 'vitest';
import { ingestDocument } from './ingest.js';
import { searchChunks } from './search.js';
import { REFUNDS, type KnowledgeContract } from './knowledge-context.contract.js';

/** Bases and documents: ownership, ingestion, idempotence, deletion, lexical search. */
export function describeKnowledgeDocuments(k: KnowledgeContract): void {
  const { readyDocument } = k;
  it('creates, lists and deletes bases of their owner only', async () => {
    const a = await k.repo.createBase('alice', 'Handbook', 'HR');
    expect(a).toMatchObject({ name: 'Handbook', description: 'HR' });
    expect(a.id).toMatch(/^kb_/);
    expect(await k.repo.listBases('alice')).toEqual([a]);
    expect(await k.repo.listBases('bob')).toEqual([]);
    expect(await k.repo.getBase('bob', a.id)).toBeUndefined();
    expect(await k.repo.deleteBase('bob', a.id)).toBe(false);
    expect(await k.repo.deleteBase('alice', a.id)).toBe(true);
    expect(await k.repo.listBases('alice')).toEqual([]);
  });

  it('ingests a document into ordered chunks and finds them by rank', async () => {
    const base = await k.repo.createBase('carol', 'FAQ');
    const long = `${'Filler sentence about nothing. '.repeat(60)}\n\n${REFUNDS}`;
    const doc = await readyDocument('carol', base.id, long);
    const [listed] = (await k.repo.listDocuments('carol', base.id)) ?? [];
    expect(listed).toMatchObject({ id: doc.id, status: 'ready', error: null });
    expect(listed!.chunk_count).toBeGreaterThan(1);

    const hits = await searchChunks(k.db, {
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
    const base = await k.repo.createBase('hugo', 'Pages');
    const html = `<html><head><title>Fleet</title><script>const zebra = 1;</script></head>
      <body><h1>Servicing</h1><p>Our cars are serviced every <em>spring</em>.</p>
      <style>.quokka { display: none }</style><p>Tyres &amp; brakes too.</p></body></html>`;
    const doc = await readyDocument('hugo', base.id, html, 'html');
    const search = (query: string) =>
      searchChunks(k.db, { userId: 'hugo', knowledgeBaseIds: [base.id], query });
    const [hit] = await search('spring tyres');
    expect(hit).toMatchObject({ document_id: doc.id, chunk_index: 0 });
    expect(hit!.content).toBe(
      'Fleet\n\nServicing\n\nOur cars are serviced every spring.\n\nTyres & brakes too.',
    );
    expect(await search('zebra quokka html body')).toEqual([]);
  });

  it('stores the same chunks once when ingestion runs twice', async () => {
    const base = await k.repo.createBase('dave', 'Twice');
    const doc = await readyDocument('dave', base.id, REFUNDS);
    expect(await ingestDocument(k.repo, 'dave', doc.id)).toMatchObject({ status: 'ready' });
    const { rows } = await k.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM knowledge_chunks WHERE document_id = $1',
      [doc.id],
    );
    expect(rows[0]!.n).toBe((await k.repo.getDocument('dave', doc.id))!.chunk_count);
  });

  it("never searches another user's base, and pending documents are not searched", async () => {
    const base = await k.repo.createBase('erin', 'Private');
    await readyDocument('erin', base.id, REFUNDS);
    const query = { knowledgeBaseIds: [base.id], query: 'refunds' };
    expect(await searchChunks(k.db, { ...query, userId: 'mallory' })).toEqual([]);
    expect(
      await k.repo.addDocument('mallory', base.id, { name: 'x', type: 'text', content: 'x' }),
    ).toBeUndefined();
    expect(await k.repo.listDocuments('mallory', base.id)).toBeUndefined();
    expect(
      await k.repo.getDocument('mallory', (await k.repo.listDocuments('erin', base.id))![0]!.id),
    ).toBeUndefined();

    const other = await k.repo.createBase('erin', 'Other');
    await k.repo.addDocument('erin', other.id, { name: 'p', type: 'text', content: 'refunds' });
    const hits = await searchChunks(k.db, { ...query, userId: 'erin' });
    expect(hits.map((h) => h.knowledge_base_id)).toEqual([base.id]);
    const otherHits = await searchChunks(k.db, {
      userId: 'erin',
      knowledgeBaseIds: [other.id],
      query: 'refunds',
    });
    expect(otherHits).toEqual([]);
  });

  it('removes the chunks of a deleted document or base from search', async () => {
    const base = await k.repo.createBase('frank', 'Gone');
    const doc = await readyDocument('frank', base.id, REFUNDS);
    const search = () =>
      searchChunks(k.db, { userId: 'frank', knowledgeBaseIds: [base.id], query: 'iceland' });
    expect(await search()).toHaveLength(1);
    expect(await k.repo.deleteDocument('mallory', base.id, doc.id)).toBe(false);
    expect(await k.repo.deleteDocument('frank', base.id, doc.id)).toBe(true);
    expect(await search()).toEqual([]);
    expect(await ingestDocument(k.repo, 'frank', doc.id)).toEqual({ status: 'missing' });

    await readyDocument('frank', base.id, REFUNDS);
    expect(await search()).toHaveLength(1);
    await k.repo.deleteBase('frank', base.id);
    expect(await search()).toEqual([]);
    const { rows } = await k.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM knowledge_chunks WHERE knowledge_base_id = $1',
      [base.id],
    );
    expect(rows[0]!.n).toBe(0);
  });

  it('treats query text as words, never as tsquery syntax', async () => {
    const base = await k.repo.createBase('gina', 'Syntax');
    await readyDocument('gina', base.id, 'Shipping to Iceland & Norway', 'markdown');
    const hits = await searchChunks(k.db, {
      userId: 'gina',
      knowledgeBaseIds: [base.id],
      query: "iceland' & !(:* | <->",
    });
    expect(hits).toHaveLength(1);
    expect(
      await searchChunks(k.db, { userId: 'gina', knowledgeBaseIds: [base.id], query: '&|!' }),
    ).toEqual([]);
  });
}
