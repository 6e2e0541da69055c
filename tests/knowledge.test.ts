import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  conceptEmbedding,
  runEntry,
  startScriptedModel,
  startServiceProcess,
  textReply,
  type ScriptedModel,
  type ServiceProcess,
} from '@agent-backend/testing';
import type { KnowledgeBase, KnowledgeDocument } from '@agent-backend/protocol';
import { requireBuild, tempDir } from './helpers.js';
import { invoke } from './agent-helpers.js';
import { callApi, searchThroughAgent, waitForIngestion } from './knowledge-helpers.js';

const MAIN = 'apps/all-in-one/dist/main.js';
const TOKEN_ISSUE = 'apps/all-in-one/dist/token-issue.js';

const FAQ = [
  '# Shipping',
  'Parcels to Iceland take two weeks by sea. '.repeat(40).trim(),
  '# Refunds',
  'Refunds are paid within five business days after the return arrives.',
].join('\n\n');

/**
 * Knowledge bases end to end on the all-in-one embedded engine (PGlite with pgvector, in-process
 * job queue, so the API's `kb-ingest` job runs in the same process's worker), with embeddings
 * from a scripted OpenAI-compatible endpoint. The distributed engine (PostgreSQL, worker
 * processes): tests/knowledge-cluster.test.ts.
 */
describe('knowledge bases on the all-in-one embedded engine', () => {
  let model: ScriptedModel;
  let env: Record<string, string>;
  let service: ServiceProcess;
  const tokens: Record<string, string> = {};
  const llm = (modelName: string) => ({ baseUrl: model.baseUrl, apiKey: 'sk-kb-1', modelName });

  const api = (user: string | undefined, method: string, path: string, body?: unknown) =>
    callApi(service.url, user ? tokens[user] : undefined, method, path, body);
  const waitForReady = (user: string, baseId: string, docId: string) =>
    waitForIngestion(service.url, tokens[user]!, baseId, docId);
  const searchAs = async (user: string, name: string, baseIds: string[], query: string) =>
    searchThroughAgent({
      baseUrl: service.url,
      token: tokens[user]!,
      model,
      modelName: name,
      knowledgeBaseIds: baseIds,
      query,
    });

  beforeAll(async () => {
    requireBuild(MAIN, TOKEN_ISSUE);
    model = await startScriptedModel({ embed: (text) => conceptEmbedding(text) });
    env = {
      DATA_DIR: tempDir('knowledge'),
      LOG_LEVEL: 'info',
      MCP_ALLOW_PRIVATE_NETWORKS: 'true',
      EMBEDDINGS_BASE_URL: model.baseUrl,
      EMBEDDINGS_MODEL: 'concepts-aio',
    };
    service = await startServiceProcess({ entry: MAIN, env });
    for (const user of ['alice', 'bob']) {
      const issued = await runEntry(TOKEN_ISSUE, [user], env);
      tokens[user] = (JSON.parse(issued.stdout) as { accessToken: string }).accessToken;
    }
  });
  afterAll(async () => {
    await service?.stop('SIGKILL');
    await model?.close();
  });

  it('ingests a document, lets the agent find it, isolates users and forgets deleted ones', async () => {
    const created = await api('alice', 'POST', '/api/knowledge-bases', { name: 'Support' });
    expect(created.status).toBe(201);
    const base = created.body as KnowledgeBase;
    expect((await api('alice', 'GET', '/api/knowledge-bases')).body).toEqual({
      knowledge_bases: [base],
    });
    expect((await api('bob', 'GET', '/api/knowledge-bases')).body).toEqual({ knowledge_bases: [] });

    const added = await api('alice', 'POST', `/api/knowledge-bases/${base.id}/documents`, {
      name: 'faq.md',
      type: 'markdown',
      content: FAQ,
    });
    expect(added.status).toBe(202);
    const doc = added.body as KnowledgeDocument;
    expect(doc).toMatchObject({ status: 'pending', knowledge_base_id: base.id, name: 'faq.md' });
    const ready = await waitForReady('alice', base.id, doc.id);
    expect(ready).toMatchObject({ status: 'ready', error: null });
    expect(ready.chunk_count).toBeGreaterThan(1);

    expect(service.stdout.join('\n')).toContain('knowledge vector search: pgvector');
    expect(model.requests('concepts-aio').length).toBeGreaterThan(0);

    // "reimbursement" is not in the text; the vectors know it means refunds.
    const found = await searchAs('alice', 'kb-alice', [base.id], 'reimbursement timing');
    expect(found).toMatchObject({
      results: [
        {
          knowledge_base_id: base.id,
          document_id: doc.id,
          document_name: 'faq.md',
          chunk_index: ready.chunk_count - 1,
          content: expect.stringContaining('Refunds are paid within five business days'),
        },
        // The other chunks follow, less similar.
        ...Array.from({ length: ready.chunk_count - 1 }, () => expect.anything()),
      ],
    });

    // Clients search the same way over HTTP, and get what the tool gave the model.
    const searched = await api('alice', 'POST', '/api/knowledge-bases/search', {
      query: 'reimbursement timing',
      knowledge_base_ids: [base.id, 'kb_unknown'],
      limit: 2,
    });
    expect(searched).toEqual({
      status: 200,
      body: { results: (found as Exclude<typeof found, string>).results.slice(0, 2) },
    });

    // Bob neither sees nor searches nor changes Alice's base: 404 like an unknown id.
    const notFound = { error: { code: 'not_found', message: 'unknown knowledge base' } };
    for (const [method, path, body] of [
      ['GET', `/api/knowledge-bases/${base.id}/documents`, undefined],
      ['POST', `/api/knowledge-bases/${base.id}/documents`, { name: 'x', content: 'x' }],
      ['DELETE', `/api/knowledge-bases/${base.id}`, undefined],
      ['GET', `/api/knowledge-bases/kb_unknown/documents`, undefined],
    ] as const) {
      expect(await api('bob', method, path, body)).toEqual({ status: 404, body: notFound });
    }
    expect(
      (await api('bob', 'DELETE', `/api/knowledge-bases/${base.id}/documents/${doc.id}`)).status,
    ).toBe(404);
    expect(await searchAs('bob', 'kb-bob', [base.id], 'refunds paid')).toBe(
      'No matching passages found.',
    );
    expect(
      await api('bob', 'POST', '/api/knowledge-bases/search', {
        query: 'refunds paid',
        knowledge_base_ids: [base.id],
      }),
    ).toEqual({ status: 200, body: { results: [] } });

    expect(
      (await api('alice', 'DELETE', `/api/knowledge-bases/${base.id}/documents/${doc.id}`)).status,
    ).toBe(204);
    expect(await searchAs('alice', 'kb-alice-after', [base.id], 'refunds paid')).toBe(
      'No matching passages found.',
    );
    const afterDeletion = await api('alice', 'POST', '/api/knowledge-bases/search', {
      query: 'refunds paid',
      knowledge_base_ids: [base.id],
    });
    expect(afterDeletion.body).toEqual({ results: [] });
    expect((await api('alice', 'DELETE', `/api/knowledge-bases/${base.id}`)).status).toBe(204);
    expect((await api('alice', 'GET', '/api/knowledge-bases')).body).toEqual({
      knowledge_bases: [],
    });
  });

  it('embeds the stored documents again after EMBEDDINGS_MODEL changed', async () => {
    const before = { ...env, DATA_DIR: tempDir('knowledge-reembed'), EMBEDDINGS_MODEL: 'c-before' };
    let instance = await startServiceProcess({ entry: MAIN, env: before });
    try {
      const issued = await runEntry(TOKEN_ISSUE, ['carol'], before);
      const token = (JSON.parse(issued.stdout) as { accessToken: string }).accessToken;
      const as = (method: string, path: string, body?: unknown) =>
        callApi(instance.url, token, method, path, body);
      const base = (await as('POST', '/api/knowledge-bases', { name: 'R' })).body as KnowledgeBase;
      const doc = (
        await as('POST', `/api/knowledge-bases/${base.id}/documents`, { name: 'faq', content: FAQ })
      ).body as KnowledgeDocument;
      await waitForIngestion(instance.url, token, base.id, doc.id);
      const embeddedBefore = model.requests('c-before').length;
      expect(embeddedBefore).toBeGreaterThan(0);

      await instance.stop('SIGTERM');
      instance = await startServiceProcess({
        entry: MAIN,
        env: { ...before, EMBEDDINGS_MODEL: 'c-after' },
      });
      // Only vectors of the new model can find it ("reimbursement" is not in the text).
      await vi.waitFor(
        async () => {
          const found = await as('POST', '/api/knowledge-bases/search', {
            query: 'reimbursement timing',
            knowledge_base_ids: [base.id],
            limit: 1,
          });
          expect(found.body).toMatchObject({
            results: [
              { document_id: doc.id, content: expect.stringContaining('Refunds are paid') },
            ],
          });
        },
        { timeout: 30_000, interval: 250 },
      );
      expect(instance.stdout.join('\n')).toContain('queueing knowledge re-embedding');
      expect(model.requests('c-before')).toHaveLength(embeddedBefore);
      expect((await as('GET', `/api/knowledge-bases/${base.id}/documents`)).body).toMatchObject({
        documents: [{ id: doc.id, status: 'ready', error: null }],
      });
    } finally {
      await instance.stop('SIGKILL');
    }
  });

  it('offers no search tool without knowledge_base_ids', async () => {
    model.script('kb-none', [textReply('Hi.')]);
    await (
      await invoke(service.url, tokens.alice, { message: 'hi', llm_config: llm('kb-none') })
    ).ended;
    const tools = model.requests('kb-none')[0]!.body.tools ?? [];
    expect(tools.map((t) => t.function.name)).not.toContain('search_knowledge_base');
  });

  it('validates bodies with field errors and requires a token', async () => {
    const created = await api('alice', 'POST', '/api/knowledge-bases', { name: 'V' });
    const base = created.body as KnowledgeBase;
    const page = await api('alice', 'POST', `/api/knowledge-bases/${base.id}/documents`, {
      name: 'page.html',
      type: 'html',
      content: '<p>Opening <b>hours</b>: nine to five.</p><script>trackVisitor()</script>',
    });
    expect(page.status).toBe(202);
    const pageDoc = page.body as KnowledgeDocument;
    expect(await waitForReady('alice', base.id, pageDoc.id)).toMatchObject({
      type: 'html',
      status: 'ready',
      chunk_count: 1,
    });
    const found = await api('alice', 'POST', '/api/knowledge-bases/search', {
      query: 'opening hours trackvisitor',
      knowledge_base_ids: [base.id],
    });
    expect(found.body).toMatchObject({
      results: [{ document_id: pageDoc.id, content: 'Opening hours: nine to five.' }],
    });
    const bad = await api('alice', 'POST', `/api/knowledge-bases/${base.id}/documents`, {
      name: 'a.pdf',
      content: 'x',
      type: 'pdf',
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({
      error: { code: 'invalid_request', details: [expect.objectContaining({ path: 'type' })] },
    });
    expect((await api('alice', 'POST', '/api/knowledge-bases', { name: ' ' })).status).toBe(400);
    const badSearch = await api('alice', 'POST', '/api/knowledge-bases/search', {
      query: ' ',
      knowledge_base_ids: [],
    });
    expect(badSearch.status).toBe(400);
    expect(
      (badSearch.body as { error: { details: Array<{ path: string }> } }).error.details
        .map((d) => d.path)
        .sort(),
    ).toEqual(['knowledge_base_ids', 'query']);
    expect(
      (
        await api(undefined, 'POST', '/api/knowledge-bases/search', {
          query: 'x',
          knowledge_base_ids: [base.id],
        })
      ).status,
    ).toBe(401);
    expect((await api(undefined, 'GET', '/api/knowledge-bases')).status).toBe(401);
    expect(
      (
        await api(undefined, 'POST', `/api/knowledge-bases/${base.id}/documents`, {
          name: 'a',
          content: 'b',
        })
      ).status,
    ).toBe(401);
  });
});
